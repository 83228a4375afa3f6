"""Anthropic Messages <-> Chat Completions: the cases the SDK tests do not reach."""

from __future__ import annotations

import orjson
import pytest

from semproxy.errors import BadRequestError
from semproxy.protocols.messages_to_chat import (
    AnthropicMessages,
    MessagesToChat,
    from_chat,
    routing_query,
)


def parse(**request: object) -> dict[str, object]:
    body = {"model": "m", "max_tokens": 16, **request}
    return AnthropicMessages().parse(orjson.dumps(body)).payload


def events(raw: bytes) -> list[tuple[str, dict[str, object]]]:
    out = []
    for block in raw.decode().strip().split("\n\n"):
        name, data = block.split("\n")
        out.append((name.removeprefix("event: "), orjson.loads(data.removeprefix("data: "))))
    return out


def chunk(delta: dict[str, object] | None = None, finish: str | None = None,
          usage: dict[str, int] | None = None) -> bytes:
    body: dict[str, object] = {"model": "up-model", "choices": [] if delta is None else [
        {"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        body["usage"] = usage
    return b"data: " + orjson.dumps(body) + b"\n\n"


def test_system_blocks_images_and_stop_sequences_translate() -> None:
    sent = parse(system=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                 stop_sequences=["END"], messages=[{"role": "user", "content": [
                     {"type": "text", "text": "what is this"},
                     {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                  "data": "AAAA"}},
                     {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]}])
    assert sent["messages"] == [
        {"role": "system", "content": "a\nb"},
        {"role": "user", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]
    assert sent["stop"] == ["END"]


def test_tool_choice_any_requires_a_tool_and_can_forbid_parallel_calls() -> None:
    sent = parse(messages=[{"role": "user", "content": "x"}],
                 tool_choice={"type": "any", "disable_parallel_tool_use": True})
    assert sent["tool_choice"] == "required" and sent["parallel_tool_calls"] is False
    named = parse(messages=[{"role": "user", "content": "x"}],
                  tool_choice={"type": "tool", "name": "f"})
    assert named["tool_choice"] == {"type": "function", "function": {"name": "f"}}


def test_routing_text_is_the_users_words_never_a_tool_result() -> None:
    messages = [
        {"role": "user", "content": "translate this sentence"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": "python stack trace"}]},
    ]
    assert routing_query(messages).text == "translate this sentence"
    messages[2]["content"].append({"type": "text", "text": "now in french"})  # type: ignore[attr-defined]
    assert routing_query(messages).text == "now in french"


def test_an_empty_conversation_is_refused() -> None:
    with pytest.raises(BadRequestError) as raised:
        parse(messages=[])
    assert raised.value.message.startswith("messages:")


@pytest.mark.parametrize(("request_", "field"), [
    ({"messages": [{"role": "system", "content": "x"}]}, "messages.0.role"),
    ({"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
     "messages.0.content.0.type"),
    ({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "web_search"}]},
     "tools.0"),
])
def test_what_chat_cannot_carry_is_kept_for_native_instances_with_the_field_named(
        request_: dict[str, object], field: str) -> None:
    body = {"model": "m", "max_tokens": 16, **request_}
    parsed = AnthropicMessages().parse(orjson.dumps(body))
    assert parsed.native == body and parsed.payload == {}
    assert parsed.unsupported is not None
    assert parsed.unsupported.message.startswith(field + ":")


def test_length_stops_as_max_tokens() -> None:
    message = from_chat({"model": "m", "choices": [
        {"message": {"content": "abc"}, "finish_reason": "length"}]})
    assert message["stop_reason"] == "max_tokens"
    assert message["usage"] == {"input_tokens": 0, "output_tokens": 0}


def test_text_then_tool_call_stream_as_two_blocks_fed_in_runs_of_events() -> None:
    upstream = b"".join([
        chunk({"role": "assistant", "content": "let me look"}),
        chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f",
                                                                    "arguments": '{"a"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        chunk({}, "tool_calls"), chunk(usage={"prompt_tokens": 3, "completion_tokens": 7}),
        b"data: [DONE]\n\n"])
    stream = MessagesToChat().events("m")
    events_in = upstream.split(b"\n\n")[:-1]
    runs = [b"\n\n".join(events_in[:2]) + b"\n\n", *(e + b"\n\n" for e in events_in[2:])]
    raw = b"".join(stream.feed(run) for run in runs) + stream.close()
    got = events(raw)
    assert [name for name, _ in got] == [
        "message_start", "ping", "content_block_start", "content_block_delta",
        "content_block_stop", "content_block_start", "content_block_delta",
        "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
    assert got[5][1]["content_block"] == {"type": "tool_use", "id": "c1", "name": "f",
                                          "input": {}}
    assert got[9][1]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert got[9][1]["usage"] == {"output_tokens": 7, "input_tokens": 3}


def test_a_garbled_event_is_skipped_not_fatal() -> None:
    stream = MessagesToChat().events("m")
    out = stream.feed(b"data: {not json\n\n" + chunk({"content": "ok"}))
    assert [name for name, _ in events(out)][-1] == "content_block_delta"


def test_a_broken_stream_ends_with_an_anthropic_error_event() -> None:
    stream = MessagesToChat().events("m")
    stream.feed(chunk({"content": "par"}))
    name, data = events(stream.error("gone"))[0]
    assert name == "error"
    assert data == {"type": "error", "error": {"type": "api_error", "message": "gone"}}
