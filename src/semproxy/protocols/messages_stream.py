"""A Chat Completions event stream retold as Anthropic Messages events.

Anthropic's order: `message_start`, `ping`, then per content block
`content_block_start`, its deltas, `content_block_stop`; at the end one
`message_delta` (stop reason, output tokens) and `message_stop`. Chat chunks
interleave text and tool-call deltas freely, so a block is closed whenever
the next delta belongs to a different one. The stop reason and the usage chunk
arrive last upstream, so `message_delta` is written when the upstream ends.
"""

from __future__ import annotations

from typing import Any

from semproxy.protocols.events import ChunkTranslator, named_event
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


class MessagesStream(ChunkTranslator):
    def __init__(self, message_id: str, model: str) -> None:
        self.message_id = message_id
        self.model = model
        self._started = False
        self._ended = False
        self._index = -1  # the open content block, -1 before the first
        self._open: str | None = None  # "text" or a tool call's upstream index
        self._stop = "end_turn"
        self._usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}

    def error(self, message: str) -> bytes:
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
        out = self._start()
        if not self.model and isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if chunk.get("usage"):
            self._usage = usage_object(self.usage)
        for choice in (chunk.get("choices") or ())[:1]:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out += self._text(delta["content"])
            for call in delta.get("tool_calls") or ():
                out += self._tool(call)
            if choice.get("finish_reason"):
                self._stop = STOP_REASONS.get(choice["finish_reason"], "end_turn")
        return out

    def _switch(self, key: str, block: dict[str, Any]) -> bytes:
        if self._open == key:
            return b""
        out = self._stop_block()
        self._index += 1
        self._open = key
        return out + named_event("content_block_start", {
            "type": "content_block_start", "index": self._index, "content_block": block})

    def _stop_block(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return named_event("content_block_stop", {"type": "content_block_stop",
                                                  "index": self._index})

    def _text(self, text: str) -> bytes:
        return self._switch("text", {"type": "text", "text": ""}) + self._delta(
            {"type": "text_delta", "text": text})

    def _tool(self, call: dict[str, Any]) -> bytes:
        function = call.get("function") or {}
        key = f"tool{call.get('index', 0)}"
        out = b""
        if call.get("id") and self._open != key:
            out = self._switch(key, {"type": "tool_use", "id": call["id"],
                                     "name": function.get("name", ""), "input": {}})
        if function.get("arguments") and self._open == key:
            out += self._delta({"type": "input_json_delta",
                                "partial_json": function["arguments"]})
        return out

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return named_event("content_block_delta", {"type": "content_block_delta",
                                                   "index": self._index, "delta": delta})

    def _end(self) -> bytes:
        if self._ended:
            return b""
        self._ended = True
        return self._stop_block() + named_event("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": self._stop, "stop_sequence": None},
            "usage": {"output_tokens": self._usage["output_tokens"],
                      "input_tokens": self._usage["input_tokens"],
                      **({"cache_read_input_tokens": self._usage["cache_read_input_tokens"]}
                         if "cache_read_input_tokens" in self._usage else {})},
        }) + named_event("message_stop", {"type": "message_stop"})
