"""OpenAI Chat Completions: the gateway's own format, relayed as it is.

`ChatCompletions` is the client protocol; `ChatPassThrough` the identity
converter of Chat upstreams, which changes no byte of an answer and only reads
its token usage (`usage` of a whole body, the usage chunk of a stream).
"""

from __future__ import annotations

from semproxy.errors import error_body
from semproxy.protocols.body import parse_chat
from semproxy.protocols.contract import Parsed
from semproxy.protocols.events import DEFAULT_LIMIT, decoded, stream_failure
from semproxy.protocols.usage import body_usage, chat_usage
from semproxy.semantic.query import routing_input
from semproxy.types import JSONObject, Usage

CHAT = "chat"


class ChatCompletions:
    name = CHAT

    def parse(self, body: bytes) -> Parsed:
        payload = parse_chat(body)
        return Parsed(payload, routing_input(payload), native=payload)

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        return error_body(message, type_, code)


def has_usage_object(events: bytes) -> bool:
    """A run of events that may carry counts (OpenAI sends `"usage": null` on every
    chunk of a stream that asked for usage; only the last one has an object)."""
    return b'"usage"' in events and (b'"usage":{' in events or b'"usage": {' in events)


def is_done(events: bytes) -> bool:
    """The run holds OpenAI's end marker (a line of its own, not text inside a delta)."""
    return any(marker in events for marker in (b"data: [DONE]", b"data:[DONE]"))


def stream_error(message: str) -> bytes:
    """The error event that ends a broken Chat Completions stream."""
    return b"data: " + error_body(message, "upstream_error", "bad_gateway") + b"\n\n"


def has_error_event(events: bytes) -> bool:
    """A run that holds an in-stream error event (`{"error": {...}}`)."""
    return b'"error"' in events and any(
        event is not None and stream_failure(event) is not None for event in decoded(events))


class ChatEvents:
    """A Chat Completions stream passed on unchanged, its usage chunk read (and an
    in-stream error event noted, for the access log)."""

    __slots__ = ("done", "failed", "usage")

    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.done = False
        self.failed = False

    def feed(self, events: bytes) -> bytes:
        if has_usage_object(events):
            for event in decoded(events):
                found = chat_usage(event.get("usage")) if event is not None else None
                self.usage = found or self.usage
        if is_done(events):
            self.done = True
        if has_error_event(events):
            self.failed = True
        return events

    def close(self) -> bytes:
        return b""

    def error(self, message: str) -> bytes:
        self.failed = True
        return stream_error(message)


class ChatPassThrough:
    """Chat Completions to a Chat upstream: the identity, which asks streams for usage."""

    source = target = CHAT

    def request(self, body: JSONObject) -> JSONObject:
        if body.get("stream") is True:
            # Ask for the usage chunk so token counts are known for streams too.
            opts = body.get("stream_options")
            body["stream_options"] = {**(opts if isinstance(opts, dict) else {}),
                                      "include_usage": True}
        return body

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        return body, body_usage(body)

    def error(self, status: int, body: bytes) -> bytes:
        return body

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> ChatEvents:
        return ChatEvents()
