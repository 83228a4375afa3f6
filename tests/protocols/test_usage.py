"""Every converter returns the token usage of the answer it read, whole or streamed, as one
`Usage` whatever protocol carried it (the input count includes cached prompt tokens)."""

from __future__ import annotations

import orjson

from semproxy.protocols.registry import CONVERTERS
from semproxy.types import Usage


def sse(*events: dict[str, object], done: bool = False) -> bytes:
    out = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    return out + (b"data: [DONE]\n\n" if done else b"")


def named(kind: str, **fields: object) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **fields}) \
        + b"\n\n"


COMPLETION = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                           "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
                        "prompt_tokens_details": {"cached_tokens": 8}}}
MESSAGE = {"id": "m", "type": "message", "role": "assistant", "model": "c",
           "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 4, "cache_read_input_tokens": 8,
                     "cache_creation_input_tokens": 0, "output_tokens": 3}}
WANT = Usage(input=12, output=3, cached_input=8)


def test_a_whole_chat_answer_reports_its_usage_in_every_client_protocol() -> None:
    body = orjson.dumps(COMPLETION)
    for source in ("chat", "messages", "responses"):
        assert CONVERTERS[(source, "chat")].answer(body)[1] == WANT


def test_a_whole_anthropic_answer_counts_cached_input_like_a_chat_one() -> None:
    body = orjson.dumps(MESSAGE)
    native = CONVERTERS[("messages", "messages")].answer(body)[1]
    translated = CONVERTERS[("chat", "messages")].answer(body)[1]
    assert native == translated == WANT


def test_a_chat_stream_reports_the_usage_chunk_and_its_end() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": None}
    last = {"choices": [], "usage": COMPLETION["usage"]}
    for source in ("chat", "messages", "responses"):
        events = CONVERTERS[(source, "chat")].events("m")
        events.feed(sse(chunk))
        assert events.usage is None and not events.done
        events.feed(sse(last, done=True))
        assert events.usage == WANT and events.done


def test_an_anthropic_stream_reports_start_and_delta_counts_natively_and_translated() -> None:
    start = named("message_start", message={**MESSAGE, "content": [], "usage": {
        "input_tokens": 4, "cache_read_input_tokens": 8, "output_tokens": 1}})
    delta = named("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 3})
    for pair in (("messages", "messages"), ("chat", "messages")):
        events = CONVERTERS[pair].events("m")
        events.feed(start + delta)
        assert events.usage == WANT and not events.done
        events.feed(named("message_stop"))
        assert events.done


def test_an_answer_without_counts_reports_none() -> None:
    body = orjson.dumps({**COMPLETION, "usage": None})
    assert CONVERTERS[("chat", "chat")].answer(body)[1] is None
    assert CONVERTERS[("embeddings", "embeddings")].answer(b'{"data": []}')[1] is None
