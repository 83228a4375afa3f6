"""The provider contract and the one base class every OpenAI-style provider shares.

A provider turns "send this chat body to this instance" into an upstream reply.
Most providers speak the OpenAI wire format and differ only in base URL, paths
and small quirks, so they are declarations on `OpenAIStyleProvider`. Embedding
support is a separate, optional capability (`EmbeddingsProvider`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable
from urllib.parse import urlencode, urlsplit, urlunsplit

import numpy as np
import orjson

from semproxy.errors import EmbeddingError, UpstreamError, UpstreamTimeoutError
from semproxy.providers.embeddings_response import parse_embeddings_response
from semproxy.providers.http import HttpClients, NetPolicy, Target


class Reply(Protocol):
    """An upstream answer whose body may still be arriving."""

    status: int
    content_type: str

    async def read(self) -> bytes: ...

    def iter_chunks(self) -> AsyncIterator[bytes]: ...

    def release(self) -> None: ...

    def abort(self) -> None: ...


class ChatProvider(Protocol):
    def target(
        self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy
    ) -> Target: ...

    async def chat(self, clients: HttpClients, target: Target, body: dict[str, Any],
                   request_id: str = "") -> Reply: ...


@runtime_checkable
class EmbeddingsProvider(Protocol):
    def embeddings_target(
        self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy
    ) -> Target: ...

    async def embed(
        self, clients: HttpClients, target: Target, texts: Sequence[str]
    ) -> np.ndarray: ...


@runtime_checkable
class EmbeddingsRelay(Protocol):
    """Serves clients' own `POST /v1/embeddings` requests (an embeddings route)."""

    def relays_embeddings(self) -> bool: ...

    def embeddings_target(
        self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy
    ) -> Target: ...

    async def relay_embeddings(self, clients: HttpClients, target: Target, body: dict[str, Any],
                               request_id: str = "") -> Reply: ...


@runtime_checkable
class NativeRelay(Protocol):
    """Speaks a client protocol natively: a request in that protocol goes as it is."""

    native_protocol: ClassVar[str]  # the ClientProtocol name, e.g. "messages"

    async def relay_native(self, clients: HttpClients, target: Target, body: dict[str, Any],
                           request_id: str = "") -> Reply: ...


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


def safe_label(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


@dataclass(frozen=True)
class OpenAIStyleProvider:
    """A provider that speaks the OpenAI chat/embeddings wire format.

    Subclasses only declare: `name`, `base_url` (None when the user must give an
    endpoint), `chat_path`, `embeddings_path` (None: no embeddings capability)
    and `sends_model` (False when the model lives in the URL, as on Azure).
    """

    name: ClassVar[str] = "openai"
    base_url: ClassVar[str | None] = "https://api.openai.com"
    chat_path: ClassVar[str] = "/v1/chat/completions"
    embeddings_path: ClassVar[str | None] = "/v1/embeddings"
    sends_model: ClassVar[bool] = True
    instance: str = ""  # the instance this provider object serves (used in messages)

    @classmethod
    def needs_endpoint(cls) -> bool:
        return cls.base_url is None

    @classmethod
    def has_embeddings(cls) -> bool:
        return cls.embeddings_path is not None

    def relays_embeddings(self) -> bool:
        return self.embeddings_path is not None

    def target(self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy) -> Target:
        return self._target(endpoint, self.chat_path, auth, model, net)

    def embeddings_target(
        self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy
    ) -> Target:
        assert self.embeddings_path is not None  # config load rejects providers without it
        return self._target(endpoint, self.embeddings_path, auth, model, net)

    def _target(
        self, endpoint: str | None, path: str, auth: Any, model: str | None, net: NetPolicy
    ) -> Target:
        base = endpoint or self.base_url
        assert base is not None  # config load requires an endpoint for these providers
        url = join_url(base, path.format(model=model or ""))
        label = safe_label(url)
        if auth.query:
            url += ("&" if "?" in url else "?") + urlencode(auth.query)
        headers = {"Content-Type": "application/json", **auth.header}
        return Target(url=url, headers=headers, net=net, model=model, label=label)

    def shape_body(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.sends_model:
            body.pop("model", None)
        if body.get("stream") is True:
            # Ask for the usage chunk so token counts are known for streams too.
            opts = body.get("stream_options")
            body["stream_options"] = {**(opts if isinstance(opts, dict) else {}),
                                      "include_usage": True}
        return body

    async def chat(self, clients: HttpClients, target: Target, body: dict[str, Any],
                   request_id: str = "") -> Reply:
        return await clients.post(target, orjson.dumps(self.shape_body(body)), request_id)

    async def relay_embeddings(self, clients: HttpClients, target: Target, body: dict[str, Any],
                               request_id: str = "") -> Reply:
        if not self.sends_model:
            body.pop("model", None)
        return await clients.post(target, orjson.dumps(body), request_id)

    async def embed(self, clients: HttpClients, target: Target, texts: Sequence[str]) -> np.ndarray:
        payload: dict[str, Any] = {"input": list(texts)}
        if target.model:
            payload["model"] = target.model
        try:
            # Routing waits on this call, so it gets one deadline for the whole
            # exchange, unlike chat whose timeout bounds each read of a stream.
            async with asyncio.timeout(target.net.timeout_s):
                reply = await clients.post(target, orjson.dumps(payload))
                raw = await reply.read()
        except UpstreamTimeoutError as exc:
            raise EmbeddingError("embedding endpoint timed out", "embedding_timeout") from exc
        except UpstreamError as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc.message}") from exc
        except TimeoutError as exc:
            raise EmbeddingError("embedding endpoint timed out", "embedding_timeout") from exc
        return parse_embeddings_response(reply.status, raw, len(texts))
