"""FakeAnthropic: Anthropic's native Messages API on a real socket, steered by the prompt.

Steering words in the last user turn's text: ``status:NNN`` (an Anthropic error
body with that status), ``tool:NAME`` (a `tool_use` block for NAME with input
``{"text": <prompt>}``). Otherwise it answers ``[name] model: prompt`` as one
text block, or as Anthropic's event stream when ``stream`` is true.
``POST .../messages/count_tokens`` answers ``{"input_tokens": COUNTED}``.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from aiohttp import web

from .common import FakeServer, RecordedRequest, json_response

_STATUS = re.compile(r"\bstatus:(\d+)\b")
_TOOL = re.compile(r"\btool:(\w+)")
_KINDS = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
          529: "overloaded_error"}


def user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or ()):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return " ".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


def sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: ".encode() + orjson.dumps({"type": kind, **data}) + b"\n\n"


COUNTED = 4242


class FakeAnthropic(FakeServer):
    async def handle(self, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        body = rec.json
        if request.path.endswith("/count_tokens"):
            return json_response({"input_tokens": COUNTED})
        text = user_text(body)
        if (status := _STATUS.search(text)) is not None:
            code = int(status.group(1))
            return json_response({"type": "error", "error": {
                "type": _KINDS.get(code, "api_error"), "message": f"steered status {code}"}},
                status=code)
        tool = _TOOL.search(text)
        if tool is not None:
            blocks = [{"type": "tool_use", "id": "toolu_1", "name": tool.group(1),
                       "input": {"text": text}}]
        else:
            blocks = [{"type": "text", "text": f"[{self.name}] {body.get('model')}: {text}"}]
        stop = "tool_use" if tool else "end_turn"
        usage = {"input_tokens": 7, "output_tokens": 3}
        if body.get("stream") is not True:
            return json_response({"id": "msg_1", "type": "message", "role": "assistant",
                                  "model": body.get("model"), "content": blocks,
                                  "stop_reason": stop, "stop_sequence": None, "usage": usage})
        return await self._stream(request, body, blocks, stop, usage)

    async def _stream(self, request: web.Request, body: dict[str, Any],
                      blocks: list[dict[str, Any]], stop: str, usage: dict[str, int]
                      ) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse("message_start", {"message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1}}}))
        await resp.write(sse("ping", {}))
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                start, halves = {"type": "text", "text": ""}, [block["text"][:5],
                                                               block["text"][5:]]
                deltas = [{"type": "text_delta", "text": h} for h in halves]
            else:
                start = {**block, "input": {}}
                raw = orjson.dumps(block["input"]).decode()
                deltas = [{"type": "input_json_delta", "partial_json": p}
                          for p in (raw[:4], raw[4:])]
            await resp.write(sse("content_block_start", {"index": i, "content_block": start}))
            for delta in deltas:
                await resp.write(sse("content_block_delta", {"index": i, "delta": delta}))
            await resp.write(sse("content_block_stop", {"index": i}))
        await resp.write(sse("message_delta", {"delta": {"stop_reason": stop,
                                                         "stop_sequence": None},
                                               "usage": {"output_tokens": usage["output_tokens"]}}))
        await resp.write(sse("message_stop", {}))
        await resp.write_eof()
        return resp
