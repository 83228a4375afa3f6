"""A provider is a declaration: which protocols it speaks natively, where, and how to authenticate.

Most providers speak the OpenAI wire format and differ only in base URL, paths
and small quirks, so each is a few lines on `Provider`. Nothing here sends a
request or reads an answer: `targets` turns a declaration and an instance's
settings into one `Target` per protocol the provider speaks, once, when the
config loads; the request path sends to them through the transport and
converts bodies with the protocols room's converters, which this module never
imports (protocols are named by their registry names: "chat", "messages",
"embeddings").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar
from urllib.parse import urlencode, urlsplit, urlunsplit

from semproxy.transport.target import NetPolicy, Target, safe_label

# Legacy text completions are OpenAI's too, and still served by vLLM, llama.cpp and others.
OPENAI_PATHS = MappingProxyType({"chat": "/v1/chat/completions", "embeddings": "/v1/embeddings",
                                 "completions": "/v1/completions"})


def join_url(endpoint: str, path: str) -> str:
    """The URL to call for `path` (the provider's API path, e.g. /v1/chat/completions).

    A bare scheme+host endpoint gets the whole path. A base URL, as the OpenAI SDK,
    vLLM, Ollama and LiteLLM write it (`http://host:8000/v1`, `.../proxy/v1`), ends
    in the start of the path: it gets the rest (`/chat/completions`). Anything
    else is a full URL and is used as given.
    """
    parts = urlsplit(endpoint)
    base = parts.path.rstrip("/")
    if parts.query:
        return endpoint
    if not base:
        return endpoint.rstrip("/") + path
    segments = base.split("/")
    for i in range(1, len(segments)):  # the longest tail of the base first
        tail = "/" + "/".join(segments[i:])
        if path.startswith(tail + "/"):
            return urlunsplit(parts._replace(path=base)) + path[len(tail):]
    return endpoint


@dataclass(frozen=True)
class Provider:
    """The declaration every provider is: subclasses set the class variables only.

    `paths` maps each protocol the provider speaks natively to its API path (a
    `{model}` in it is the instance's `options.model`); its first entry is the
    provider's own protocol. `base_url` is None when the user must give an
    endpoint; `sends_model` is False when the model lives in the URL (Azure);
    `headers` are sent unless the instance's auth sets the same name.
    """

    name: ClassVar[str] = "openai"
    base_url: ClassVar[str | None] = "https://api.openai.com"
    paths: ClassVar[Mapping[str, str]] = OPENAI_PATHS
    sends_model: ClassVar[bool] = True
    headers: ClassVar[Mapping[str, str]] = MappingProxyType({})
    instance: str = ""  # the instance this declaration was resolved for

    @classmethod
    def needs_endpoint(cls) -> bool:
        return cls.base_url is None

    @classmethod
    def has_embeddings(cls) -> bool:
        """It can embed the prompts semantic routing compares (`embeddings.provider`)."""
        return "embeddings" in cls.paths

    def base(self, endpoint: str | None) -> str:
        base = endpoint or self.base_url
        assert base is not None  # config load requires an endpoint for these providers
        return base

    def targets(self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy
                ) -> dict[str, Target]:
        """One target per protocol spoken natively, in `paths` order."""
        return {protocol: self._target(endpoint, path, auth, model, net)
                for protocol, path in self.paths.items()}

    def target(self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy) -> Target:
        """The target of the provider's own protocol (its first path)."""
        return next(iter(self.targets(endpoint, auth, model, net).values()))

    def embeddings_target(
        self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy
    ) -> Target | None:
        path = self.paths.get("embeddings")
        return None if path is None else self._target(endpoint, path, auth, model, net)

    def _target(
        self, endpoint: str | None, path: str, auth: Any, model: str | None, net: NetPolicy
    ) -> Target:
        url = join_url(self.base(endpoint), path.format(model=model or ""))
        label = safe_label(url)
        if auth.query:
            url += ("&" if "?" in url else "?") + urlencode(auth.query)
        given = {name.lower() for name in auth.header}
        defaults = {k: v for k, v in self.headers.items() if k.lower() not in given}
        headers = {"Content-Type": "application/json", **defaults, **auth.header}
        return Target(url=url, headers=headers, net=net, model=model, label=label)

    def with_instance(self, instance: str) -> Provider:
        return replace(self, instance=instance)
