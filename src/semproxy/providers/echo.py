"""`echo`: a built-in provider for demos and dry runs; it never touches the network.

It answers a valid chat.completion (or an SSE stream when `stream` is true) that
names the instance and quotes the prompt, so routing can be seen end to end
without keys. The gateway translates that answer for Anthropic and Responses
clients like any other upstream's. Embeddings requests get vectors derived
from a hash of each input: the same text, the same unit vector, and no meaning.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import orjson

from semproxy.providers.http import HttpClients, NetPolicy, Target


class MemoryReply:
    """A complete reply held in memory, served whole or as one chunk per event."""

    __slots__ = ("_chunks", "content_type", "status")

    def __init__(self, chunks: list[bytes], content_type: str) -> None:
        self._chunks = chunks
        self.status = 200
        self.content_type = content_type

    async def read(self) -> bytes:
        return b"".join(self._chunks)

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk

    def release(self) -> None:
        self._chunks = []

    def abort(self) -> None:
        self._chunks = []


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or ()):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(
                    p["text"] for p in content
                    if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
    return ""


@dataclass(frozen=True)
class EchoProvider:
    name: ClassVar[str] = "echo"
    instance: str = ""

    @classmethod
    def needs_endpoint(cls) -> bool:
        return False

    @classmethod
    def has_embeddings(cls) -> bool:
        return False

    def relays_embeddings(self) -> bool:
        return True

    def target(self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy) -> Target:
        return Target(url="echo://local", headers={}, net=net, model=model, label="echo://local")

    def embeddings_target(
        self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy
    ) -> Target:
        return self.target(endpoint, auth, model, net)

    async def relay_embeddings(self, clients: HttpClients, target: Target, body: dict[str, Any],
                               request_id: str = "") -> MemoryReply:
        given = body.get("input")
        texts = [given] if isinstance(given, str) else list(given or ())
        size = body.get("dimensions")
        size = size if isinstance(size, int) and 0 < size <= 4096 else ECHO_DIMENSIONS
        as_base64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i,
                 "embedding": _vector(str(text), size, as_base64)} for i, text in enumerate(texts)]
        tokens = sum(len(str(t).split()) for t in texts)
        answer = {"object": "list", "data": data,
                  "model": str(body.get("model") or target.model or "echo"),
                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        return MemoryReply([orjson.dumps(answer)], "application/json")

    async def chat(self, clients: HttpClients, target: Target, body: dict[str, Any],
                   request_id: str = "") -> MemoryReply:
        model = str(body.get("model") or target.model or "echo")
        text = f"[{self.instance}] {last_user_text(body)}"
        created = int(time.time())
        completion_id = f"chatcmpl-echo-{uuid.uuid4().hex}"  # unique, as OpenAI's are
        usage = {"prompt_tokens": len(text.split()), "completion_tokens": len(text.split()),
                 "total_tokens": 2 * len(text.split())}
        if body.get("stream") is True:
            return MemoryReply(_stream(completion_id, model, text, created, usage),
                               "text/event-stream")
        completion = {
            "id": completion_id, "object": "chat.completion", "created": created,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": usage,
        }
        return MemoryReply([orjson.dumps(completion)], "application/json")


ECHO_DIMENSIONS = 8


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
