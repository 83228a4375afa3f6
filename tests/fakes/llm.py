"""FakeLLM: an OpenAI-compatible chat upstream steered by words in the prompt.

Steering words (anywhere in the last user message's text):

* ``status:NNN``    answer HTTP NNN with an OpenAI-shaped error body
* ``slow:MS``       wait MS milliseconds before answering (before the first byte of a stream)
* ``hang``          never answer (until the client leaves or the server closes)
* ``garbage``       200 with a body that is not JSON
* ``chunks:N``      stream N content chunks (default 5)
* ``interval:MS``   wait MS milliseconds between stream chunks (default 0)
* ``breakstream:K`` abort the connection after K content chunks (no [DONE])
* ``tool:NAME``     call tool NAME with arguments ``{"text": <the prompt>}`` instead of
                    answering text (finish_reason ``tool_calls``; streamed in two pieces)

A POST to a path ending in ``/completions`` but not ``/chat/completions`` is a legacy
text completion: answered as ``text_completion`` (whole, or streamed when asked).
* ``filter``        end the answer with finish_reason ``content_filter``
* ``errorevent:K``  after K content chunks send an error event, then ``[DONE]``
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from .common import FakeServer, RecordedRequest, json_response

_INT_WORDS = ("status", "slow", "chunks", "interval", "breakstream", "errorevent")
_INT_RE = re.compile(r"\b(" + "|".join(_INT_WORDS) + r"):(\d+)\b")
_HANG_RE = re.compile(r"\bhang\b")
_GARBAGE_RE = re.compile(r"\bgarbage\b")
_FILTER_RE = re.compile(r"\bfilter\b")
_TOOL_RE = re.compile(r"\btool:(\w+)")


@dataclass
class Steering:
    status: int | None = None
    slow_ms: int = 0
    hang: bool = False
    garbage: bool = False
    chunks: int = 5
    interval_ms: int = 0
    break_after: int | None = None
    tool: str | None = None
    filtered: bool = False
    error_after: int | None = None

    @classmethod
    def parse(cls, text: str) -> Steering:
        found = {key: int(val) for key, val in _INT_RE.findall(text)}
        return cls(
            status=found.get("status"),
            slow_ms=found.get("slow", 0),
            hang=bool(_HANG_RE.search(text)),
            garbage=bool(_GARBAGE_RE.search(text)),
            chunks=found.get("chunks", 5),
            interval_ms=found.get("interval", 0),
            break_after=found.get("breakstream"),
            tool=(m.group(1) if (m := _TOOL_RE.search(text)) else None),
            filtered=bool(_FILTER_RE.search(text)),
            error_after=found.get("errorevent"),
        )


def content_text(content: Any) -> str:
    """Text of a message ``content``: a string or an array of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return " ".join(parts)
    return ""


def last_user_text(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    if isinstance(messages, list):
        for msg in reversed(messages):
            if isinstance(msg, dict) and msg.get("role") == "user":
                return content_text(msg.get("content"))
    prompt = body.get("prompt")  # legacy /completions shape
    return prompt if isinstance(prompt, str) else ""


def _word_count(body: dict[str, Any]) -> int:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return len(last_user_text(body).split())
    return sum(len(content_text(m.get("content")).split()) for m in messages if isinstance(m, dict))


def split_even(text: str, n: int) -> list[str]:
    """Split ``text`` into ``n`` consecutive slices whose concatenation is ``text``."""
    size, extra = divmod(len(text), n)
    out, pos = [], 0
    for i in range(n):
        step = size + (1 if i < extra else 0)
        out.append(text[pos : pos + step])
        pos += step
    return out


class FakeLLM(FakeServer):
    """OpenAI-compatible chat completions upstream on a real socket.

    Any POST path is answered as a chat completion; GET on any path is a health probe.
    """

    def __init__(self, name: str = "fake", host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(name, host, port)
        self.stream_cancelled = 0  # client went away mid-stream
        self.streams_completed = 0  # streams that reached [DONE]
        self.streams_broken = 0  # streams we aborted on purpose (breakstream:K)
        self._cancel_event = asyncio.Event()

    def extra_headers(self) -> dict[str, str]:
        return {"X-Fake-Upstream": self.name}

    async def wait_stream_cancelled(self, count: int = 1, timeout: float = 2.0) -> None:
        """Wait until at least ``count`` streams were abandoned by the client."""
        async with asyncio.timeout(timeout):
            while self.stream_cancelled < count:
                self._cancel_event.clear()
                await self._cancel_event.wait()

    def reset(self) -> None:
        super().reset()
        self.stream_cancelled = self.streams_completed = self.streams_broken = 0

    # -- request handling --------------------------------------------------

    async def handle(self, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        body = rec.json
        if not isinstance(body, dict):
            return self.error(400, "request body must be a JSON object")
        text = last_user_text(body)
        steer = Steering.parse(text)
        if steer.slow_ms and not await self.sleep(steer.slow_ms / 1000):
            return self.error(503, "server shutting down")
        if steer.hang:
            await self.sleep(3600)
            return self.error(503, "server shutting down")
        if steer.status is not None and steer.status != 200:
            return self.error(steer.status, f"steered status {steer.status}")
        if steer.garbage:
            return web.Response(
                text="<html>definitely not json",
                status=200,
                headers=self.extra_headers(),
                content_type="text/html",
            )
        model = body.get("model") if isinstance(body.get("model"), str) else "unknown"
        reply = f"[{self.name}] {model}: {text}"
        prompt_tokens = _word_count(body)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(reply.split()),
            "total_tokens": prompt_tokens + len(reply.split()),
        }
        if steer.tool is not None:
            return await self._tool_call(request, body, model, steer.tool, text, usage)
        if not request.path.endswith("/chat/completions") and request.path.endswith(
                "/completions"):
            return await self._text_completion(request, body, model, reply, usage)
        if body.get("stream") is True:
            opts = body.get("stream_options")
            include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
            stream_usage = usage if include_usage else None
            return await self._stream(request, model, reply, stream_usage, steer)
        return json_response(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply},
                        "finish_reason": "content_filter" if steer.filtered else "stop",
                    }
                ],
                "usage": usage,
            },
            headers=self.extra_headers(),
        )

    async def _stream(
        self,
        request: web.Request,
        model: str,
        reply: str,
        usage: dict[str, int] | None,
        steer: Steering,
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                **self.extra_headers(),
            },
        )
        chunk_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())

        def event(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
            chunk: dict[str, Any] = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": []
                if delta is None
                else [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            return b"data: " + orjson.dumps(chunk) + b"\n\n"

        pieces = split_even(reply, max(steer.chunks, 1))
        try:
            await resp.prepare(request)
            await resp.write(event({"role": "assistant", "content": ""}))
            for i, piece in enumerate(pieces):
                if steer.break_after is not None and i >= steer.break_after:
                    return self._abort(request, resp)
                if steer.error_after is not None and i >= steer.error_after:
                    await resp.write(b"data: " + orjson.dumps(
                        {"error": {"message": "overloaded", "type": "server_error"}}) + b"\n\n")
                    await resp.write(b"data: [DONE]\n\n")
                    await resp.write_eof()
                    return resp
                if i and steer.interval_ms and not await self.sleep(steer.interval_ms / 1000):
                    return self._abort(request, resp)
                await resp.write(event({"content": piece}))
            if steer.break_after is not None and steer.break_after >= len(pieces):
                return self._abort(request, resp)
            await resp.write(event({}, "content_filter" if steer.filtered else "stop"))
            if usage is not None:
                await resp.write(event(None, usage=usage))
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            self._note_cancelled()
            raise
        self.streams_completed += 1
        return resp

    async def _tool_call(self, request: web.Request, body: dict[str, Any], model: str,
                         name: str, text: str, usage: dict[str, int]) -> web.StreamResponse:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        arguments = orjson.dumps({"text": text}).decode()
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "created": int(time.time()),
                "model": model}
        if body.get("stream") is not True:
            call = {"id": call_id, "type": "function",
                    "function": {"name": name, "arguments": arguments}}
            return json_response({**base, "object": "chat.completion", "choices": [{
                "index": 0, "message": {"role": "assistant", "content": None,
                                        "tool_calls": [call]},
                "finish_reason": "tool_calls"}], "usage": usage}, headers=self.extra_headers())
        half = len(arguments) // 2
        deltas = [
            {"role": "assistant", "content": None, "tool_calls": [{
                "index": 0, "id": call_id, "type": "function",
                "function": {"name": name, "arguments": arguments[:half]}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]},
        ]
        chunks = [{**base, "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        chunks.append({**base, "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        chunks.append({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           **self.extra_headers()})
        await resp.prepare(request)
        for chunk in chunks:
            await resp.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _text_completion(self, request: web.Request, body: dict[str, Any], model: str,
                               reply: str, usage: dict[str, int]) -> web.StreamResponse:
        base = {"id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion",
                "created": int(time.time()), "model": model}
        if body.get("stream") is not True:
            return json_response({**base, "choices": [{"text": reply, "index": 0,
                                                       "logprobs": None,
                                                       "finish_reason": "stop"}],
                                  "usage": usage}, headers=self.extra_headers())
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           **self.extra_headers()})
        await resp.prepare(request)
        for piece, finish in [(reply[:4], None), (reply[4:], None), ("", "stop")]:
            await resp.write(b"data: " + orjson.dumps({**base, "choices": [{
                "text": piece, "index": 0, "logprobs": None, "finish_reason": finish}]})
                + b"\n\n")
        await resp.write(b"data: " + orjson.dumps({**base, "choices": [], "usage": usage})
                         + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    def _abort(self, request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        """Drop the connection mid-stream: the client never sees the end of the body."""
        self.streams_broken += 1
        if request.transport is not None:
            request.transport.close()
        return resp

    def _note_cancelled(self) -> None:
        self.stream_cancelled += 1
        self._cancel_event.set()
