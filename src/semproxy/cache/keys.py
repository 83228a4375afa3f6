"""Cache keys: the exact key of an effective request and the semantic partition key.

Both hash the request the serving instance would receive: the client's Chat
Completions body with the instance's `options` written over it (as the call
phase does), every sampling parameter, tools and messages, plus the instance's
identity (name, provider, endpoint), so a change of an instance's model or
options in the config lands in new keys and the old entries are never read
again (they age out by TTL). `stream` and `stream_options` are left out: an
answer is stored in one form and replayed in either mode.

The partition key is the same hash with the compared text taken out: the
messages before the compared window stay (earlier turns, system prompt), the
window is replaced by a marker, and the embedding model's name goes in, so
vectors of two models are never compared. Under one partition key, only the
last user turn differs; its vector decides.

Keys start with a scope (APISIX `cache_key`): the route unless
`share_across_routes`, the consumer unless `include_consumer: false`, and any
`include_vars`, so that purges can find them by pattern:
`<prefix>:e:route=R:consumer=C:<sha256>` (e: an entry, p: a partition).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from semproxy.semantic.query import message_text

_STREAM_FIELDS = frozenset({"stream", "stream_options"})
_ESCAPES = str.maketrans({c: f"%{ord(c):02X}" for c in "%:=*?[]\\"})


@dataclass(frozen=True, slots=True)
class Upstream:
    """What identifies the upstream request besides the body: the serving instance."""

    name: str
    provider: str
    endpoint: str
    options: Mapping[str, Any]
    # The start of every exact key's hashed document, serialised and hashed once per
    # config: `[["name","provider","endpoint"],` (the body and `]` follow). A key copies
    # this hash state: cheaper than a new hash object (OpenSSL looks its algorithm up
    # by name for each one).
    head: hashlib._Hash = field(init=False, repr=False, compare=False)
    # The same for partition keys, per embedding model: `[[...identity], "model",`.
    heads: dict[str, hashlib._Hash] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        identity = orjson.dumps([[self.name, self.provider, self.endpoint]])
        object.__setattr__(self, "head", hashlib.sha256(identity[:-1] + b","))
        object.__setattr__(self, "heads", {})

    def partition_head(self, model: str) -> hashlib._Hash:
        found = self.heads.get(model)
        if found is None:
            document = orjson.dumps([[self.name, self.provider, self.endpoint], model])
            found = self.heads[model] = hashlib.sha256(document[:-1] + b",")
        return found


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose entries a key belongs to (None: not part of the scope)."""

    route: str | None
    consumer: str | None
    variables: tuple[tuple[str, str], ...] = ()

    def text(self) -> str:
        parts = []
        if self.route is not None:
            parts.append(f"route={_escape(self.route)}")
        if self.consumer is not None:
            parts.append(f"consumer={_escape(self.consumer)}")
        parts += [f"var.{_escape(k)}={_escape(v)}" for k, v in self.variables]
        return ":".join(parts) or "shared"


def _escape(value: str) -> str:
    # A request-controlled value (a header, the consumer name) must not be able to
    # forge another scope's boundary or a purge pattern.
    return value.translate(_ESCAPES)


def effective_body(payload: Mapping[str, Any], upstream: Upstream) -> dict[str, Any]:
    """The body the instance receives, without the streaming switches."""
    body = dict(payload)
    for name in _STREAM_FIELDS:
        body.pop(name, None)
    if upstream.options:
        body.update(upstream.options)
    return body


def exact_key(prefix: str, scope: Scope, payload: Mapping[str, Any], upstream: Upstream) -> str:
    """The key of this very request: same scope, instance and body give the same key."""
    return exact_key_under(f"{prefix}:e:{scope.text()}:", payload, upstream)


def exact_key_under(head: str, payload: Mapping[str, Any], upstream: Upstream) -> str:
    """`exact_key` with its scope part (`<prefix>:e:<scope>:`) already made: the digest
    is the one of `[[name, provider, endpoint], body]`, its first part serialised once."""
    body = dict(payload)  # effective_body, without a call
    for name in _STREAM_FIELDS:
        body.pop(name, None)
    if upstream.options:
        body.update(upstream.options)
    digest = upstream.head.copy()
    digest.update(orjson.dumps(body, option=orjson.OPT_SORT_KEYS) + b"]")
    return head + digest.hexdigest()


def partition_key(prefix: str, scope: Scope, payload: Mapping[str, Any], upstream: Upstream,
                  window: Sequence[int], model: str) -> str:
    """The key of every request that differs from this one only in the compared window."""
    body = effective_body(payload, upstream)
    messages = body.get("messages")
    if isinstance(messages, list):
        hidden = set(window)
        body["messages"] = [{"compared": True} if i in hidden else m
                            for i, m in enumerate(messages)]
    digest = upstream.partition_head(model).copy()  # `[identity, model, body]` hashed
    digest.update(orjson.dumps(body, option=orjson.OPT_SORT_KEYS) + b"]")
    return f"{prefix}:p:{scope.text()}:{digest.hexdigest()}"


def compared_window(messages: Sequence[Any], countback: int = 1, ignore_system: bool = True,
                    ignore_assistant: bool = True, ignore_tool: bool = True) -> list[int]:
    """Indices of the messages whose text the semantic layer compares (APISIX
    `semantic.match`): the last `countback` messages left after the role filters."""
    skipped = {role for role, skip in (("system", ignore_system), ("developer", ignore_system),
                                       ("assistant", ignore_assistant), ("tool", ignore_tool),
                                       ("function", ignore_tool)) if skip}
    kept = [i for i, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") not in skipped]
    return kept[-countback:]


def compared_text(messages: Sequence[Any], window: Sequence[int]) -> str | None:
    """The text of the window, or None when it holds something a text vector cannot
    stand for (an image, audio, a tool call): such a prompt is looked up exactly only."""
    texts = []
    for i in window:
        message = messages[i]
        content = message.get("content")
        if message.get("tool_calls") or message.get("function_call"):
            return None
        if isinstance(content, list) and any(
                not isinstance(p, dict) or p.get("type") != "text" for p in content):
            return None
        texts.append(message_text(message))
    return "\n".join(texts).strip() or None


def purge_pattern(prefix: str, route: str | None = None, consumer: str | None = None) -> str:
    """A glob matching the keys of one route, one consumer, both, or all (neither).

    Entries stored under `share_across_routes` carry no route, and those stored
    under `include_consumer: false` no consumer: a purge by route or consumer
    cannot tell whose they are, so only a purge of all removes them.
    """
    if route is not None and consumer is not None:
        return f"{prefix}:?:route={_escape(route)}:consumer={_escape(consumer)}:*"
    if route is not None:
        return f"{prefix}:?:route={_escape(route)}:*"
    if consumer is not None:
        return f"{prefix}:?:*consumer={_escape(consumer)}:*"
    return f"{prefix}:?:*"
