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
# What a stream translator may hold at most, unless told (max_resp_body_size's default).
DEFAULT_LIMIT = 32 * 1024 * 1024


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


def stream_failure(event: dict[str, Any]) -> str | None:
    """The message of an in-stream error event (`{"error": {...}}`, as OpenAI ends a
    stream that failed after it started), None for any other event."""
    error = event.get("error")
    if error is None or event.get("choices"):
        return None
    message = error.get("message") if isinstance(error, dict) else error
    return message if isinstance(message, str) and message else "the upstream reported an error"


def first_choice(chunk: dict[str, Any]) -> tuple[dict[str, Any], Any] | None:
    """The delta and finish reason of a chunk's first choice; None when it has none of the
    right shape (a wrong-typed field is skipped, as a garbled event is)."""
    choices = chunk.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict):
        return None
    delta = choice.get("delta")
    return (delta if isinstance(delta, dict) else {}), choice.get("finish_reason")


def tool_deltas(delta: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, call) of each well-formed tool call delta: a call's `index` says which
    call of a parallel set a piece belongs to (pieces of several calls may interleave)."""
    calls = delta.get("tool_calls")
    for position, call in enumerate(calls if isinstance(calls, list) else ()):
        if not isinstance(call, dict):
            continue
        index = call.get("index", position)
        if not isinstance(call.get("function"), dict):
            call = {**call, "function": {}}
        yield (index if type(index) is int else position), call


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


class ChunkTranslator(ABC):
    """The loop both stream translators share: every Chat Completions chunk in a
    run of upstream events becomes the client protocol's events (`_chunk`), the
    end marker closes them (`_end`), and `close` ends a stream that had no marker
    (opening it first, `_start`, when nothing came at all). Each is idempotent.
    On the way it keeps the usage chunk's counts (`usage`) and whether the end
    marker came (`done`), as every `EventConverter` does.

    Nothing is translated after the end marker or an error. An upstream error
    event becomes the client protocol's error event (`failed`), and so does a
    stream that stopped with neither a finish reason nor its end marker: a cut
    answer must not reach the client as a complete one. `limit` bounds what a
    translator may hold (text or arguments it must repeat at the end), as
    `max_resp_body_size` bounds a whole answer.
    """

    usage: Usage | None = None
    done: bool = False
    failed: bool = False
    finished: bool = False  # a finish reason came: the answer is whole without [DONE]

    def feed(self, chunk: bytes) -> bytes:
        out = bytearray()
        for event in decoded(chunk):
            if self.done or self.failed:
                break
            if event is DONE:
                self.done = True
                out += self._start() + self._end()
                continue
            failure = stream_failure(event)
            if failure is not None:
                out += self._start() + self.error(failure)
                continue
            if event.get("usage"):
                self.usage = chat_usage(event["usage"]) or self.usage
            out += self._chunk(event)
        return bytes(out)

    def close(self) -> bytes:
        if self.done or self.failed:
            return b""
        if self.finished:
            return self._start() + self._end()
        return self._start() + self.error("upstream stream ended before the answer was complete")

    def error(self, message: str) -> bytes:
        """The client protocol's error event; the stream ends with it."""
        self.failed = True
        return self._error(message)

    @abstractmethod
    def _error(self, message: str) -> bytes: ...

    @abstractmethod
    def _start(self) -> bytes: ...

    @abstractmethod
    def _chunk(self, chunk: dict[str, Any]) -> bytes: ...

    @abstractmethod
    def _end(self) -> bytes: ...
