"""Server-sent events in and out: the `data:` payloads of an upstream stream, and
an event rendered for a client.

The upstream stream arrives as the network cuts it, so an event can be split
across chunks; the unfinished last line is kept until the next chunk completes
it. (This follows the line handling of `server.exchange.StreamUsage`; when the
upstream client gains its own event reader, translators read from that.)
"""

from __future__ import annotations

from typing import Any

import orjson

MAX_PENDING_LINE = 1 << 20  # a single event larger than this is dropped, not buffered


class DataLines:
    """The `data:` payloads of an event stream, whatever the chunk boundaries."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        *lines, rest = (self._pending + chunk).split(b"\n")
        self._pending = rest if len(rest) <= MAX_PENDING_LINE else b""
        return [line[5:].strip() for line in lines if line.startswith(b"data:")]


def named_event(name: str, data: dict[str, Any]) -> bytes:
    """One SSE event with an `event:` line, as Anthropic and Responses streams send them."""
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
