"""A streamed answer assembled for storing, and a stored one replayed for the OpenAI SDK."""

from __future__ import annotations

import orjson
from openai.types.chat import ChatCompletionChunk

from semproxy.cache.assemble import CompletionAssembler
from semproxy.cache.replay import stream_events

COMPLETION = {"id": "c1", "object": "chat.completion", "created": 5, "model": "m",
              "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                  "role": "assistant", "content": "Hi there",
                  "tool_calls": [{"id": "t1", "type": "function",
                                  "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}


def test_replayed_stream_reassembles_into_the_same_answer() -> None:
    events = b"".join(stream_events(COMPLETION, include_usage=True))
    assembler = CompletionAssembler(1 << 20)
    assembler.feed(events)
    assert assembler.result() == COMPLETION


def test_replayed_chunks_parse_as_openai_sdk_chunks_and_end_with_done() -> None:
    events = list(stream_events(COMPLETION, include_usage=False))
    assert events[-1] == b"data: [DONE]\n\n"
    chunks = [ChatCompletionChunk.model_validate(orjson.loads(e[6:])) for e in events[:-1]]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hi there" and all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_stream_without_its_end_or_with_an_error_is_not_an_answer() -> None:
    events = b"".join(stream_events(COMPLETION))
    cut = CompletionAssembler(1 << 20)
    cut.feed(events.replace(b"data: [DONE]\n\n", b""))
    assert cut.result() is None
    broken = CompletionAssembler(1 << 20)
    broken.feed(b'data: {"error": {"message": "overloaded"}}\n\n' + events)
    assert broken.result() is None and broken.failed == "error"


def test_assembly_gives_up_past_its_byte_bound() -> None:
    assembler = CompletionAssembler(100)
    assembler.feed(b"".join(stream_events(COMPLETION)))
    assert assembler.result() is None and assembler.failed == "too_large"
