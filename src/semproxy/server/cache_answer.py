"""A response cache's answers and headers, in the client's protocol and mode.

A stored answer is a Chat Completions object. A hit is an `Answer` like an
upstream's: a `MemoryReply` holding the whole body, or the Chat Completions
events of it (cache/replay.py) when the client asked for a stream, read by the
Chat identity converter and turned into the client's protocol by the same
converter that serves a Chat upstream to it (`protocols/registry.conversion`),
so a Messages or Responses client gets its own shape, whole or streamed,
whatever mode the answer was stored from. A single flight's follower that
streams gets the leader's events as they arrive (`FlightReply`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from semproxy.cache.flight import Flight, FlightBroken
from semproxy.cache.replay import stream_events
from semproxy.config.cache import AICache
from semproxy.errors import UpstreamError
from semproxy.protocols.chat import CHAT, has_usage_object
from semproxy.protocols.events import decoded
from semproxy.protocols.registry import conversion
from semproxy.server.exchange import Answer, Exchange
from semproxy.transport.memory import MemoryReply

SSE = "text/event-stream"
JSON = "application/json"
HIT_EXACT = "HIT-L1"  # APISIX's names for the two layers' hits
HIT_SEMANTIC = "HIT-L2"


def wants_stream(exchange: Exchange) -> bool:
    payload = exchange.payload
    return payload is not None and payload.get("stream") is True


def hit_answer(exchange: Exchange, completion: dict[str, Any]) -> Answer:
    """`completion` (usage marked cached) as the client asked for it. A whole one goes
    as read already (`Answer.body`): the relay has nothing to parse."""
    if wants_stream(exchange):
        return _answer(exchange, MemoryReply(list(stream_events(completion, True)), SSE))
    body = orjson.dumps(completion)
    return _answer(exchange, MemoryReply([body], JSON), body)


def follower_answer(exchange: Exchange, flight: Flight[dict[str, Any]], timeout_s: float
                    ) -> Answer:
    """The leader's stream, as it arrives, for a follower that streams too."""
    return _answer(exchange, FlightReply(flight, timeout_s))


def _answer(exchange: Exchange, reply: MemoryReply | FlightReply, body: bytes | None = None
            ) -> Answer:
    found = conversion(exchange.protocol.name, CHAT)
    assert found is not None  # every chat-like protocol is served from Chat Completions
    speaks, back = found
    return Answer(reply, speaks, back, body, content_type=JSON, label="cache")


class FlightReply:
    """A `Reply` whose events are a single flight leader's, read as they are published.

    Usage in them is marked as cached, as a stored hit's is. A leader whose stream
    breaks ends this one with an upstream error too (the relay writes the error
    event its protocol uses)."""

    status = 200
    content_type = SSE

    def __init__(self, flight: Flight[dict[str, Any]], timeout_s: float) -> None:
        self._flight = flight
        self._timeout_s = timeout_s

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.iter_chunks()])

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._flight.events(self._timeout_s):
                yield marked_cached(chunk) if has_usage_object(chunk) else chunk
        except (FlightBroken, TimeoutError) as exc:
            raise UpstreamError("the shared upstream stream ended unexpectedly") from exc

    def release(self) -> None:
        pass

    def abort(self) -> None:
        pass


def marked_cached(events: bytes) -> bytes:
    """A run of Chat Completions events with every usage object's prompt tokens reported
    as cached (`prompt_tokens_details.cached_tokens`)."""
    out = bytearray()
    for event in decoded(events):
        if event is None:
            out += b"data: [DONE]\n\n"
            continue
        usage = event.get("usage")
        if isinstance(usage, dict):
            details = dict(usage.get("prompt_tokens_details") or {})
            details["cached_tokens"] = usage.get("prompt_tokens", 0)
            event["usage"] = {**usage, "prompt_tokens_details": details}
        out += b"data: " + orjson.dumps(event) + b"\n\n"
    return bytes(out)


def cache_headers(conf: AICache, debug: bool, status: str, age: float | None,
                  similarity: float | None, layer: str | None, detail: str | None
                  ) -> dict[str, str]:
    """The response headers of the cache's part in one request.

    APISIX's, when `cache_headers` is on (its default): `X-AI-Cache-Status`, and on a
    hit `X-AI-Cache-Age` (and `X-AI-Cache-Similarity` on a semantic one). `Age` on
    every hit (RFC 9111). With the route's `debug_headers`: the layer, and on a miss
    or bypass why (`X-AI-Cache-Detail`: the bypass reason, the near-miss rule that
    refused the closest entry, or what shadow mode would have done).
    """
    headers: dict[str, str] = {}
    hit = age is not None
    if conf.cache_headers:
        headers["X-AI-Cache-Status"] = status
        if hit:
            headers["X-AI-Cache-Age"] = str(int(age or 0))
    if hit:
        headers["Age"] = str(int(age or 0))
    if similarity is not None and ((conf.cache_headers and hit) or debug):
        headers["X-AI-Cache-Similarity"] = f"{similarity:.4f}"
    if debug:
        if layer is not None:
            headers["X-AI-Cache-Layer"] = layer
        if detail is not None:
            headers["X-AI-Cache-Detail"] = detail
    return headers
