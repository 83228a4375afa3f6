"""`EchoTransport`: the built-in demo upstream behind `echo://` targets; no network at all.

The `echo` provider declares targets `echo://<instance>/v1/chat/completions`
(and `.../v1/embeddings`). A chat request is answered with a valid
chat.completion (or an SSE stream when `stream` is true) that names the instance
and quotes the prompt, so routing can be seen end to end without keys; the
gateway translates that answer for Anthropic and Responses clients like any
other upstream's. An embeddings request gets vectors derived from a hash of
each input: the same text, the same unit vector, and no meaning. A probe (GET)
is answered 200.
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
    usage = {"prompt_tokens": len(text.split()), "completion_tokens": len(text.split()),
             "total_tokens": 2 * len(text.split())}
    if body.get("stream") is True:
        return MemoryReply(_stream(completion_id, model, text, created, usage),
                           "text/event-stream")
    answer = {
        "id": completion_id, "object": "chat.completion", "created": created,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": usage,
    }
    return MemoryReply([orjson.dumps(answer)], "application/json")


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


def _stream(completion_id: str, model: str, text: str, created: int, usage: dict[str, int]
            ) -> list[bytes]:
    def event(delta: dict[str, Any], finish: str | None, extra: dict[str, Any]) -> bytes:
        chunk = {"id": completion_id, "object": "chat.completion.chunk",
                 "created": created, "model": model,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    events = [event({"role": "assistant", "content": ""}, None, {})]
    events += [event({"content": word + " "}, None, {}) for word in text.split()]
    events.append(event({}, "stop", {}))
    final = {"id": completion_id, "object": "chat.completion.chunk",
             "created": created, "model": model, "choices": [], "usage": usage}
    events.append(b"data: " + orjson.dumps(final) + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events
