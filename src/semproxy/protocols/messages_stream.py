"""A Chat Completions event stream retold as Anthropic Messages events.

Anthropic's order: `message_start`, `ping`, then per content block
`content_block_start`, its deltas, `content_block_stop`; at the end one
`message_delta` (stop reason, output tokens) and `message_stop`. Blocks follow
one another and a closed block cannot be reopened, but Chat chunks interleave
freely: text and tool calls, and the pieces of parallel tool calls (each piece
names its call by `index`). So one block is open at a time: text, or the first
tool call, streamed as they come; a tool call that starts while another is
open is held (its name and arguments so far) and written whole at the end,
after the open one. What is held is bounded (`limit`, max_resp_body_size).
The stop reason and the usage chunk arrive last upstream, so `message_delta`
is written when the upstream ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from semproxy.errors import UpstreamError
from semproxy.protocols.events import (
    DEFAULT_LIMIT,
    ChunkTranslator,
    first_choice,
    named_event,
    text_of,
    tool_deltas,
)
from semproxy.protocols.messages import STOP_REASONS
from semproxy.types import Usage


def usage_object(usage: Usage | None) -> dict[str, int]:
    """`usage` in Anthropic's words (zeros when nothing was reported): its `input_tokens`
    leave out the prompt tokens read from a cache, which are `cache_read_input_tokens`."""
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    out = {"input_tokens": usage.input - min(usage.cached_input, usage.input),
           "output_tokens": usage.output}
    if usage.cached_input:
        out["cache_read_input_tokens"] = min(usage.cached_input, usage.input)
    return out


@dataclass(slots=True)
class HeldCall:
    """A tool call that started while another block was open: written at the end."""

    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


class MessagesStream(ChunkTranslator):
    def __init__(self, message_id: str, model: str, limit: int = DEFAULT_LIMIT) -> None:
        self.message_id = message_id
        self.model = model
        self.limit = limit
        self._started = False
        self._ended = False
        self._index = -1  # the open content block, -1 before the first
        self._open: str | int | None = None  # "text" or the open tool call's index
        self._closed: set[int] = set()  # tool calls whose block was written and closed
        self._held: dict[int, HeldCall] = {}
        self._held_bytes = 0
        self._stop = "end_turn"
        self._usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}

    def _error(self, message: str) -> bytes:
        return named_event("error", {"type": "error", "error": {
            "type": "api_error", "message": message}})

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        message: dict[str, Any] = {
            "id": self.message_id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": self._usage}
        return (named_event("message_start", {"type": "message_start", "message": message})
                + named_event("ping", {"type": "ping"}))

    def _chunk(self, chunk: dict[str, Any]) -> bytes:
        model = chunk.get("model")
        if not self._started and isinstance(model, str) and model:
            self.model = model  # the instance's model, as a whole answer reports it
        out = self._start()
        if chunk.get("usage"):
            self._usage = usage_object(self.usage)
        found = first_choice(chunk)
        if found is None:
            return out
        delta, finish = found
        if text := text_of(delta.get("content")):
            out += self._text(text)
        for index, call in tool_deltas(delta):
            out += self._tool(index, call)
        if isinstance(finish, str) and finish:
            self.finished = True
            self._stop = STOP_REASONS.get(finish, "end_turn")
        return out

    def _switch(self, key: str | int, block: dict[str, Any]) -> bytes:
        out = self._stop_block()
        self._index += 1
        self._open = key
        return out + named_event("content_block_start", {
            "type": "content_block_start", "index": self._index, "content_block": block})

    def _stop_block(self) -> bytes:
        if self._open is None:
            return b""
        if isinstance(self._open, int):
            self._closed.add(self._open)
        self._open = None
        return named_event("content_block_stop", {"type": "content_block_stop",
                                                  "index": self._index})

    def _text(self, text: str) -> bytes:
        out = b"" if self._open == "text" else self._switch("text", {"type": "text", "text": ""})
        return out + self._delta({"type": "text_delta", "text": text})

    def _tool(self, index: int, call: dict[str, Any]) -> bytes:
        function = call["function"]
        arguments = text_of(function.get("arguments"))
        if self._open == index:
            return self._delta({"type": "input_json_delta", "partial_json": arguments}) \
                if arguments else b""
        if index in self._closed:
            return b""  # its block was closed by text that came after it: nothing to add to
        if isinstance(self._open, int) or index in self._held:
            self._hold(index, call, arguments)  # another call is streaming: write it later
            return b""
        out = self._switch(index, {"type": "tool_use", "id": text_of(call.get("id")),
                                   "name": text_of(function.get("name")), "input": {}})
        if arguments:
            out += self._delta({"type": "input_json_delta", "partial_json": arguments})
        return out

    def _hold(self, index: int, call: dict[str, Any], arguments: str) -> None:
        held = self._held.get(index)
        if held is None:
            held = self._held[index] = HeldCall(text_of(call.get("id")),
                                                text_of(call["function"].get("name")))
        held.arguments.append(arguments)
        self._held_bytes += len(arguments)
        if self._held_bytes > self.limit:
            reason = (f"parallel tool calls held more than {self.limit} bytes "
                                "(max_resp_body_size)")
            raise UpstreamError(reason, reason)

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return named_event("content_block_delta", {"type": "content_block_delta",
                                                   "index": self._index, "delta": delta})

    def _flush_held(self) -> bytes:
        out = b""
        for index in sorted(self._held):
            held = self._held[index]
            out += self._switch(index, {"type": "tool_use", "id": held.id, "name": held.name,
                                        "input": {}})
            if arguments := "".join(held.arguments):
                out += self._delta({"type": "input_json_delta", "partial_json": arguments})
        self._held.clear()
        return out + self._stop_block()

    def _end(self) -> bytes:
        if self._ended:
            return b""
        self._ended = True
        return self._stop_block() + self._flush_held() + named_event("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": self._stop, "stop_sequence": None},
            "usage": {"output_tokens": self._usage["output_tokens"],
                      "input_tokens": self._usage["input_tokens"],
                      **({"cache_read_input_tokens": self._usage["cache_read_input_tokens"]}
                         if "cache_read_input_tokens" in self._usage else {})},
        }) + named_event("message_stop", {"type": "message_stop"})
