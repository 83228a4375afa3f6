"""The answer of a miss, in the one form the cache stores: a Chat Completions object.

A whole answer is read from the body the call phase read (Chat Completions,
or the client's own protocol on a native leg, turned into Chat here). A
streamed one is assembled by `CacheTap`, a `StreamTap` on the relay: it sees
the upstream's events as they are relayed, turns them into Chat Completions
events when the upstream speaks another protocol, assembles them
(cache/assemble.py) and, for a single flight's leader, publishes them to the
followers reading the same stream.
"""

from __future__ import annotations

from typing import Any

import orjson

from semproxy.cache.assemble import CompletionAssembler
from semproxy.cache.flight import Flight
from semproxy.protocols.chat import CHAT
from semproxy.protocols.contract import EventConverter
from semproxy.protocols.registry import converter
from semproxy.types import Usage

Completion = dict[str, Any]


class CacheTap:
    """Assembles one relayed stream for storing; see the module docstring."""

    def __init__(self, max_bytes: int, model: str | None,
                 flight: Flight[Completion] | None = None) -> None:
        self.assembler = CompletionAssembler(max_bytes)
        self.flight = flight
        self.complete = False
        self._model = model
        self._to_chat: EventConverter | None = None

    def events(self, data: bytes, protocol: str) -> None:
        if protocol != CHAT:
            data = self._chat(protocol).feed(data)
        if not data:
            return
        self.assembler.feed(data)
        if self.flight is None:
            return
        if self.assembler.failed is not None:  # too large to share: followers go their way
            self.flight.resolve(None)
            self.flight = None
            return
        self.flight.publish(data)

    def _chat(self, protocol: str) -> EventConverter:
        if self._to_chat is None:
            found = converter(CHAT, protocol)
            assert found is not None  # the leg that relays this stream was built from it
            self._to_chat = found.events(self._model)
        return self._to_chat

    def end(self, usage: Usage | None, complete: bool) -> None:
        self.complete = complete
        if complete and self._to_chat is not None:
            tail = self._to_chat.close()
            if tail:
                self.assembler.feed(tail)
                if self.flight is not None and self.assembler.failed is None:
                    self.flight.publish(tail)

    def completion(self) -> Completion | None:
        """The assembled answer, when the stream ended properly."""
        return self.assembler.result() if self.complete else None


def whole_completion(body: bytes, protocol: str) -> Completion | None:
    """A whole answer body read in `protocol` (the leg's upstream-facing one), as a Chat
    Completions object; None when it is not one."""
    try:
        if protocol != CHAT:
            found = converter(CHAT, protocol)
            if found is None:
                return None
            body = found.answer(body)[0]
        completion = orjson.loads(body)
    except Exception:  # fail-open: an answer the cache cannot read is not stored
        return None
    return completion if isinstance(completion, dict) else None
