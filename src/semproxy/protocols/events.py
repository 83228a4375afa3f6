"""Server-sent events in and out: the `data:` payloads of complete upstream
events, and an event rendered for a client.

Converters are fed what `transport.sse.sse_events` yields: runs of whole
events (the reader keeps an unfinished event until its blank line arrives and
bounds it in size and time), so nothing here waits for the rest of an event.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import orjson

from semproxy.protocols.usage import chat_usage
from semproxy.types import Usage

DONE = None  # what `decoded` yields for OpenAI's `data: [DONE]`


def decoded(events: bytes) -> Iterator[dict[str, Any] | None]:
    """The JSON object of every event in a run of complete events, DONE for the
    end marker. A payload that is not a JSON object is skipped: one garbled event
    must not end a stream the client is reading."""
    for line in events.splitlines():
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            yield DONE
            continue
        try:
            found = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(found, dict):
            yield found


def named_event(name: str, data: dict[str, Any]) -> bytes:
    """One SSE event with an `event:` line, as Anthropic and Responses streams send them."""
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class ChunkTranslator(ABC):
    """The loop both stream translators share: every Chat Completions chunk in a
    run of upstream events becomes the client protocol's events (`_chunk`), the
    end marker closes them (`_end`), and `close` ends a stream that had no marker
    (opening it first, `_start`, when nothing came at all). Each is idempotent.
    On the way it keeps the usage chunk's counts (`usage`) and whether the end
    marker came (`done`), as every `EventConverter` does."""

    usage: Usage | None = None
    done: bool = False

    def feed(self, chunk: bytes) -> bytes:
        out = bytearray()
        for event in decoded(chunk):
            if event is DONE:
                self.done = True
                out += self._end()
                continue
            if event.get("usage"):
                self.usage = chat_usage(event["usage"]) or self.usage
            out += self._chunk(event)
        return bytes(out)

    def close(self) -> bytes:
        return self._start() + self._end()

    @abstractmethod
    def _start(self) -> bytes: ...

    @abstractmethod
    def _chunk(self, chunk: dict[str, Any]) -> bytes: ...

    @abstractmethod
    def _end(self) -> bytes: ...

