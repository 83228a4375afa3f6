"""A stored answer sent again: whole, or as a Chat Completions event stream.

The cache stores one form (a Chat Completions object) whatever the mode it came
in; a hit is replayed in the mode the client asked for. The stream is what the
OpenAI SDK accepts from OpenAI itself: a first chunk with the role, the text,
the tool calls with their whole arguments, a chunk with the finish reason, the
usage chunk (`choices: []`) when the client asked for it with
`stream_options.include_usage`, and `data: [DONE]`. The relay's existing
translators turn it into Messages or Responses events for those clients.

A hit's usage says it was cached: every prompt token is reported as
`prompt_tokens_details.cached_tokens`, and `semproxy_cache` carries the layer,
similarity and age (the SDKs keep unknown fields).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from typing import Any

import orjson


class _Ids:
    """Fresh completion ids without a system call each: a random prefix per process
    (drawn again in a forked worker), then a counter."""

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.prefix = os.urandom(6).hex()
        self.counter = itertools.count(1)

    def next(self) -> str:
        return f"chatcmpl-cache-{self.prefix}{next(self.counter):012x}"


_ids = _Ids()


def as_hit(stored: dict[str, Any], layer: str, similarity: float | None, age_s: float
           ) -> dict[str, Any]:
    """The completion a hit answers with: a new id and time, the usage marked cached."""
    out = dict(stored)
    out["id"] = _ids.next()
    out["created"] = int(time.time())
    usage = out.get("usage")
    if isinstance(usage, dict):
        details = dict(usage.get("prompt_tokens_details") or {})
        details["cached_tokens"] = usage.get("prompt_tokens", 0)
        out["usage"] = {**usage, "prompt_tokens_details": details}
    out["semproxy_cache"] = {"layer": layer, "age": int(age_s),
                             **({"similarity": round(similarity, 4)}
                                if similarity is not None else {})}
    return out


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(data) + b"\n\n"


def stream_events(completion: dict[str, Any], include_usage: bool = False) -> Iterator[bytes]:
    """The SSE events of `completion` as a Chat Completions stream, `[DONE]` last."""
    head = {"id": completion.get("id", ""), "object": "chat.completion.chunk",
            "created": completion.get("created", 0), "model": completion.get("model", "")}
    if "system_fingerprint" in completion:
        head["system_fingerprint"] = completion["system_fingerprint"]
    for choice in completion.get("choices", ()):
        index, message = choice.get("index", 0), choice.get("message") or {}
        first: dict[str, Any] = {"role": message.get("role", "assistant"), "content": ""}
        yield _event({**head, "choices": [_part(index, first, None)]})
        if message.get("content"):
            yield _event({**head, "choices": [_part(index, {"content": message["content"]},
                                                    None)]})
        if message.get("refusal"):
            yield _event({**head, "choices": [_part(index, {"refusal": message["refusal"]},
                                                    None)]})
        calls = [{"index": i, **call} for i, call in enumerate(message.get("tool_calls") or ())]
        if calls:
            yield _event({**head, "choices": [_part(index, {"tool_calls": calls}, None)]})
        yield _event({**head, "choices": [_part(index, {}, choice.get("finish_reason"))]})
    if include_usage and isinstance(completion.get("usage"), dict):
        yield _event({**head, "choices": [], "usage": completion["usage"]})
    yield b"data: [DONE]\n\n"


def _part(index: int, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
