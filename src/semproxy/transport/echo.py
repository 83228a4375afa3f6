"""`EchoTransport`: the built-in demo upstream behind `echo://` targets; no network at all.

The `echo` provider declares targets `echo://<instance>/v1/chat/completions`
(and `.../v1/embeddings`, `.../v1/completions`). A chat request is answered
with a valid chat.completion (or an SSE stream when `stream` is true) that
names the instance and quotes the prompt, so routing can be seen end to end
without keys; the gateway translates that answer for Anthropic and Responses
clients like any other upstream's. When the request offers tools and its
`tool_choice` requires one (`required`, or a named function), the answer is a
call of that tool (the first one for `required`) whose arguments fill the
tool's declared parameters (the prompt for a string, an empty value of the
declared type otherwise), so the no-key quickstart shows tool translation too.
A legacy completions request gets a text_completion. An embeddings request
gets vectors derived from a hash of each input: the same text, the same unit
vector, and no meaning. A probe (GET) is answered 200.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import orjson

from semproxy.transport.memory import MemoryReply
from semproxy.transport.target import Target
from semproxy.types import content_text

ECHO_DIMENSIONS = 8


class EchoTransport:
    async def post(self, target: Target, data: bytes, request_id: str = "") -> MemoryReply:
        body = orjson.loads(data)
        url = urlsplit(target.url)
        if url.path.endswith("/embeddings"):
            return embeddings(body, target.model)
        if not url.path.endswith("/chat/completions"):
            return text_completion(url.netloc, body, target.model)
        return completion(url.netloc, body, target.model)

    async def get(self, target: Target) -> MemoryReply:
        return MemoryReply([], "text/plain")

    async def aclose(self) -> None:
        return None


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or ()):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def completion(instance: str, body: dict[str, Any], default_model: str | None) -> MemoryReply:
    model = str(body.get("model") or default_model or "echo")
    text = f"[{instance}] {last_user_text(body)}"
    created = int(time.time())
    completion_id = f"chatcmpl-echo-{uuid.uuid4().hex}"  # unique, as OpenAI's are
    usage = _usage(text)
    call = required_call(body, last_user_text(body))
    if body.get("stream") is True:
        events = _stream(completion_id, model, text, created, usage) if call is None \
            else _call_stream(completion_id, model, call, created, usage)
        return MemoryReply(events, "text/event-stream")
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if call is not None:
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    answer = {
        "id": completion_id, "object": "chat.completion", "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "stop" if call is None else "tool_calls"}],
        "usage": usage,
    }
    return MemoryReply([orjson.dumps(answer)], "application/json")


def _usage(text: str) -> dict[str, int]:
    words = len(text.split())
    return {"prompt_tokens": words, "completion_tokens": words, "total_tokens": 2 * words}


def required_call(body: dict[str, Any], prompt: str) -> dict[str, Any] | None:
    """The tool call a request's `tool_choice` requires (None when it requires none)."""
    tools = [t["function"] for t in body.get("tools") or ()
             if isinstance(t, dict) and isinstance(t.get("function"), dict)
             and isinstance(t["function"].get("name"), str)]
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        named = (choice.get("function") or {}).get("name")
        tools = [t for t in tools if t["name"] == named]
    elif choice != "required":
        return None
    if not tools:
        return None
    return {"id": f"call_echo_{uuid.uuid4().hex[:16]}", "type": "function", "function": {
        "name": tools[0]["name"],
        "arguments": orjson.dumps(_arguments(tools[0].get("parameters"), prompt)).decode()}}


_EMPTY: dict[str, Any] = {"integer": 0, "number": 0, "boolean": False, "array": [],
                          "object": {}, "null": None}


def _arguments(schema: Any, prompt: str) -> dict[str, Any]:
    """Arguments for a JSON-schema object: every declared property, the prompt in strings."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    out: dict[str, Any] = {}
    for name, spec in (properties if isinstance(properties, dict) else {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        enum = spec.get("enum") if isinstance(spec, dict) else None
        if isinstance(enum, list) and enum:
            out[name] = enum[0]
        else:
            out[name] = prompt if kind in (None, "string") else _EMPTY.get(str(kind))
    return out


def text_completion(instance: str, body: dict[str, Any], default_model: str | None
                    ) -> MemoryReply:
    """A legacy text completion quoting the prompt (the first one of a batch)."""
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        prompt = next((p for p in prompt if isinstance(p, str)), "")
    text = f"[{instance}] {prompt if isinstance(prompt, str) else ''}"
    base = {"id": f"cmpl-echo-{uuid.uuid4().hex}", "object": "text_completion",
            "created": int(time.time()), "model": str(body.get("model") or default_model
                                                      or "echo")}
    if body.get("stream") is not True:
        return MemoryReply([orjson.dumps({**base, "choices": [{
            "text": text, "index": 0, "logprobs": None, "finish_reason": "stop"}],
            "usage": _usage(text)})], "application/json")
    pieces = [(word + " ", None) for word in text.split()] + [("", "stop")]
    events = [b"data: " + orjson.dumps({**base, "choices": [{
        "text": piece, "index": 0, "logprobs": None, "finish_reason": finish}]}) + b"\n\n"
        for piece, finish in pieces]
    events.append(b"data: " + orjson.dumps({**base, "choices": [], "usage": _usage(text)})
                  + b"\n\n")
    return MemoryReply([*events, b"data: [DONE]\n\n"], "text/event-stream")


def embeddings(body: dict[str, Any], default_model: str | None) -> MemoryReply:
    given = body.get("input")
    texts = [given] if isinstance(given, str) else list(given or ())
    size = body.get("dimensions")
    size = size if isinstance(size, int) and 0 < size <= 4096 else ECHO_DIMENSIONS
    as_base64 = body.get("encoding_format") == "base64"
    data = [{"object": "embedding", "index": i,
             "embedding": _vector(str(text), size, as_base64)} for i, text in enumerate(texts)]
    tokens = sum(len(str(t).split()) for t in texts)
    answer = {"object": "list", "data": data,
              "model": str(body.get("model") or default_model or "echo"),
              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
    return MemoryReply([orjson.dumps(answer)], "application/json")


def _vector(text: str, size: int, as_base64: bool) -> list[float] | str:
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    vector = np.random.default_rng(seed).standard_normal(size).astype(np.float32)
    vector /= np.linalg.norm(vector) or 1.0
    if as_base64:
        return base64.b64encode(vector.tobytes()).decode()
    return [float(x) for x in vector]


def _chunk(completion_id: str, model: str, created: int, delta: dict[str, Any] | None,
           finish: str | None = None, **extra: Any) -> bytes:
    chunk = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
             "model": model, "choices": [] if delta is None else [
                 {"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _stream(completion_id: str, model: str, text: str, created: int, usage: dict[str, int]
            ) -> list[bytes]:
    events = [_chunk(completion_id, model, created, {"role": "assistant", "content": ""})]
    events += [_chunk(completion_id, model, created, {"content": word + " "})
               for word in text.split()]
    events.append(_chunk(completion_id, model, created, {}, "stop"))
    events.append(_chunk(completion_id, model, created, None, usage=usage))
    events.append(b"data: [DONE]\n\n")
    return events


def _call_stream(completion_id: str, model: str, call: dict[str, Any], created: int,
                 usage: dict[str, int]) -> list[bytes]:
    """A tool call streamed as OpenAI does: the call's id and name first, then its
    arguments in pieces."""
    arguments = call["function"]["arguments"]
    half = len(arguments) // 2
    start = {"index": 0, "id": call["id"], "type": "function",
             "function": {"name": call["function"]["name"], "arguments": arguments[:half]}}
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [start]},
        {"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}]
    events = [_chunk(completion_id, model, created, d) for d in deltas]
    events.append(_chunk(completion_id, model, created, {}, "tool_calls"))
    events.append(_chunk(completion_id, model, created, None, usage=usage))
    events.append(b"data: [DONE]\n\n")
    return events
