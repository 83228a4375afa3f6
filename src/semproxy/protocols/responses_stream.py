"""A Chat Completions event stream retold as OpenAI Responses events, and the
Responses objects both the whole and the streamed answer are made of.

Order: `response.created`, `response.in_progress`; per output item
`response.output_item.added`, for a message `response.content_part.added`, its
`response.output_text.delta`s, `.output_text.done`, `.content_part.done`, for a
function call its `response.function_call_arguments.delta`s and `.done`; then
`response.output_item.done`; last `response.completed` (or
`response.incomplete` when the token limit cut the answer) with the whole
response. Every event carries a `sequence_number`.
"""

from __future__ import annotations

import time
from typing import Any

from semproxy.protocols.events import ChunkTranslator, named_event


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": item_id, "status": status, "role": "assistant",
            "content": [output_text(text)] if status == "completed" else []}


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def call_item(item_id: str, call_id: str, name: str, arguments: str,
              status: str = "completed") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
            "arguments": arguments, "status": status}


def response_usage(node: Any) -> dict[str, Any]:
    node = node if isinstance(node, dict) else {}
    given = int(node.get("prompt_tokens") or 0)
    made = int(node.get("completion_tokens") or 0)
    details = node.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    return {"input_tokens": given, "output_tokens": made, "total_tokens": given + made,
            "input_tokens_details": {"cached_tokens": cached if isinstance(cached, int) else 0},
            "output_tokens_details": {"reasoning_tokens": 0}}


def response_object(response_id: str, model: str, output: list[dict[str, Any]],
                    finish: str | None, usage: Any, status: str | None = None
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


class ResponsesStream(ChunkTranslator):
    def __init__(self, response_id: str, message_id: str, model: str) -> None:
        self.response_id = response_id
        self.message_id = message_id
        self.model = model
        self._seq = 0
        self._started = False
        self._ended = False
        self._output: list[dict[str, Any]] = []  # finished items
        self._item: dict[str, Any] | None = None  # the open one
        self._buffer: list[str] = []  # its text or arguments so far
        self._key: str | None = None
        self._finish: str | None = None
        self._usage: Any = None

    def _event(self, kind: str, **fields: Any) -> bytes:
        self._seq += 1
        return named_event(kind, {"type": kind, "sequence_number": self._seq, **fields})

    def error(self, message: str) -> bytes:
        return self._event("error", code="upstream_error", message=message, param=None)

    def _response(self, status: str) -> dict[str, Any]:
        return response_object(self.response_id, self.model, list(self._output),
                               self._finish, self._usage, status)

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        response = self._response("in_progress")
        return (self._event("response.created", response=response)
                + self._event("response.in_progress", response=response))

    def _chunk(self, chunk: dict[str, Any]) -> bytes:
        out = self._start()
        if not self.model and isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        for choice in (chunk.get("choices") or ())[:1]:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out += self._text(delta["content"])
            for call in delta.get("tool_calls") or ():
                out += self._call(call)
            self._finish = choice.get("finish_reason") or self._finish
        return out

    def _open(self, key: str, item: dict[str, Any]) -> bytes:
        out = self._close_item()
        self._key, self._item, self._buffer = key, item, []
        return out + self._event("response.output_item.added",
                                 output_index=len(self._output), item=item)

    def _text(self, text: str) -> bytes:
        out = b""
        if self._key != "text":
            out = self._open("text", message_item(self.message_id, "", "in_progress"))
            out += self._event("response.content_part.added", item_id=self.message_id,
                               output_index=len(self._output), content_index=0,
                               part=output_text(""))
        self._buffer.append(text)
        return out + self._event("response.output_text.delta", item_id=self.message_id,
                                 output_index=len(self._output), content_index=0,
                                 delta=text, logprobs=[])

    def _call(self, call: dict[str, Any]) -> bytes:
        function = call.get("function") or {}
        key = f"call{call.get('index', 0)}"
        out = b""
        if call.get("id") and self._key != key:
            item = call_item(f"fc_{call['id']}", call["id"], function.get("name", ""), "",
                             "in_progress")
            out = self._open(key, item)
        if function.get("arguments") and self._key == key and self._item is not None:
            self._buffer.append(function["arguments"])
            out += self._event("response.function_call_arguments.delta",
                               item_id=self._item["id"], output_index=len(self._output),
                               delta=function["arguments"])
        return out

    def _close_item(self) -> bytes:
        item, index, joined = self._item, len(self._output), "".join(self._buffer)
        if item is None:
            return b""
        self._item = self._key = None
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
        self._output.append(done)
        return out + self._event("response.output_item.done", output_index=index, item=done)

    def _end(self) -> bytes:
        if self._ended:
            return b""
        self._ended = True
        out = self._close_item()
        response = self._response("incomplete" if self._finish == "length" else "completed")
        kind = "response.incomplete" if self._finish == "length" else "response.completed"
        return out + self._event(kind, response=response)
