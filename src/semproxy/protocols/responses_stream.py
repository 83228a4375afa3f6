"""A Chat Completions event stream retold as OpenAI Responses events, and the
Responses objects both the whole and the streamed answer are made of.

Order: `response.created`, `response.in_progress`; per output item
`response.output_item.added`, for a message `response.content_part.added`, its
`response.output_text.delta`s, `.output_text.done`, `.content_part.done`, for a
function call its `response.function_call_arguments.delta`s and `.done`; then
`response.output_item.done`; last `response.completed` (or
`response.incomplete` when the token limit cut the answer) with the whole
response. Every event carries a `sequence_number`.

Items are told apart by `output_index`, so several may be open at once: the
pieces of parallel tool calls may interleave (each names its call by
`index`) and each goes to its own item. The done events and the final
response repeat every item whole, so the translator holds the text and
arguments it streamed; past `limit` (max_resp_body_size, the cap of a whole
answer) the stream ends with an error event instead of growing.
"""

from __future__ import annotations

import time
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
from semproxy.types import Usage


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": item_id, "status": status, "role": "assistant",
            "content": [output_text(text)] if status == "completed" else []}


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def call_item(item_id: str, call_id: str, name: str, arguments: str,
              status: str = "completed") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": status}


def response_usage(usage: Usage) -> dict[str, Any]:
    return {"input_tokens": usage.input, "output_tokens": usage.output,
            "total_tokens": usage.total,
            "input_tokens_details": {"cached_tokens": usage.cached_input},
            "output_tokens_details": {"reasoning_tokens": 0}}


def response_object(response_id: str, model: str, output: list[dict[str, Any]],
                    finish: str | None, usage: Usage | None, status: str | None = None
                    ) -> dict[str, Any]:
    incomplete = finish == "length"
    return {
        "id": response_id, "object": "response", "created_at": int(time.time()),
        "status": status or ("incomplete" if incomplete else "completed"),
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "model": model, "output": output, "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [],
        "usage": response_usage(usage) if usage else None,
    }


@dataclass(slots=True)
class OpenItem:
    """An output item being streamed: where it is, and its text or arguments so far."""

    index: int
    item: dict[str, Any]
    parts: list[str] = field(default_factory=list)


class ResponsesStream(ChunkTranslator):
    def __init__(self, response_id: str, message_id: str, model: str,
                 limit: int = DEFAULT_LIMIT) -> None:
        self.response_id = response_id
        self.message_id = message_id
        self.model = model
        self.limit = limit
        self._seq = 0
        self._started = False
        self._ended = False
        self._output: dict[int, dict[str, Any]] = {}  # finished items by output index
        self._open: dict[str | int, OpenItem] = {}  # "text", or a tool call's index
        self._items = 0  # output indexes given out
        self._held = 0  # bytes of text and arguments kept for the done events
        self._finish: str | None = None

    def _event(self, kind: str, **fields: Any) -> bytes:
        self._seq += 1
        return named_event(kind, {"type": kind, "sequence_number": self._seq, **fields})

    def _error(self, message: str) -> bytes:
        return self._event("error", code="upstream_error", message=message, param=None)

    def _response(self, status: str) -> dict[str, Any]:
        output = [self._output[i] for i in sorted(self._output)]
        return response_object(self.response_id, self.model, output, self._finish,
                               self.usage, status)

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        response = self._response("in_progress")
        return (self._event("response.created", response=response)
                + self._event("response.in_progress", response=response))

    def _chunk(self, chunk: dict[str, Any]) -> bytes:
        model = chunk.get("model")
        if not self._started and isinstance(model, str) and model:
            self.model = model  # the instance's model, as a whole answer reports it
        out = self._start()
        found = first_choice(chunk)
        if found is None:
            return out
        delta, finish = found
        if text := text_of(delta.get("content")):
            out += self._text(text)
        for index, call in tool_deltas(delta):
            out += self._call(index, call)
        if isinstance(finish, str) and finish:
            self.finished = True
            self._finish = finish
        return out

    def _add(self, key: str | int, item: dict[str, Any]) -> tuple[OpenItem, bytes]:
        opened = self._open[key] = OpenItem(self._items, item)
        self._items += 1
        return opened, self._event("response.output_item.added", output_index=opened.index,
                                   item=item)

    def _keep(self, opened: OpenItem, piece: str) -> None:
        opened.parts.append(piece)
        self._held += len(piece)
        if self._held > self.limit:
            reason = (f"the answer held for its final events passed {self.limit} "
                                "bytes (max_resp_body_size)")
            raise UpstreamError(reason, reason)

    def _text(self, text: str) -> bytes:
        out = b""
        opened = self._open.get("text")
        if opened is None:
            opened, out = self._add("text", message_item(self.message_id, "", "in_progress"))
            out += self._event("response.content_part.added", item_id=self.message_id,
                               output_index=opened.index, content_index=0,
                               part=output_text(""))
        self._keep(opened, text)
        return out + self._event("response.output_text.delta", item_id=self.message_id,
                                 output_index=opened.index, content_index=0,
                                 delta=text, logprobs=[])

    def _call(self, index: int, call: dict[str, Any]) -> bytes:
        function = call["function"]
        out = b""
        opened = self._open.get(index)
        if opened is None:
            call_id = text_of(call.get("id")) or f"call_{self.response_id}_{index}"
            opened, out = self._add(index, call_item(
                f"fc_{call_id}", call_id, text_of(function.get("name")), "", "in_progress"))
        arguments = text_of(function.get("arguments"))
        if arguments:
            self._keep(opened, arguments)
            out += self._event("response.function_call_arguments.delta",
                               item_id=opened.item["id"], output_index=opened.index,
                               delta=arguments)
        return out

    def _close_item(self, opened: OpenItem) -> bytes:
        item, index, joined = opened.item, opened.index, "".join(opened.parts)
        opened.parts.clear()
        if item["type"] == "message":
            done = message_item(item["id"], joined)
            out = self._event("response.output_text.done", item_id=item["id"],
                              output_index=index, content_index=0, text=joined, logprobs=[])
            out += self._event("response.content_part.done", item_id=item["id"],
                               output_index=index, content_index=0, part=output_text(joined))
        else:
            done = {**item, "arguments": joined, "status": "completed"}
            out = self._event("response.function_call_arguments.done", item_id=item["id"],
                              output_index=index, arguments=joined, name=item["name"])
        self._output[index] = done
        return out + self._event("response.output_item.done", output_index=index, item=done)

    def _end(self) -> bytes:
        if self._ended:
            return b""
        self._ended = True
        out = b"".join(self._close_item(o) for o in sorted(self._open.values(),
                                                             key=lambda o: o.index))
        self._open.clear()
        response = self._response("incomplete" if self._finish == "length" else "completed")
        kind = "response.incomplete" if self._finish == "length" else "response.completed"
        return out + self._event(kind, response=response)
