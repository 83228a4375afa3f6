"""The official `anthropic` SDK against the gateway, served by an OpenAI-style upstream."""

from __future__ import annotations

import anthropic
import pytest
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway


def client(gw: RunningGateway) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=gw.url, api_key="unused", max_retries=0)


async def test_a_message_is_answered_in_anthropic_shape(gw: RunningGateway, up: FakeLLM) -> None:
    async with client(gw) as c:
        message = await c.messages.create(
            model="claude-x", max_tokens=64, system="be brief",
            messages=[{"role": "user", "content": "hello there"}])
    assert message.type == "message" and message.role == "assistant"
    assert message.content[0].type == "text"
    assert message.content[0].text == "[up] a-model: hello there"
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == 4 and message.usage.output_tokens == 4
    sent = up.last_request.json
    assert sent["messages"][0] == {"role": "system", "content": "be brief"}
    assert sent["max_tokens"] == 64


async def test_a_stream_arrives_as_anthropic_events_in_order(gw: RunningGateway) -> None:
    async with client(gw) as c, c.messages.stream(
            model="claude-x", max_tokens=64,
            messages=[{"role": "user", "content": "stream this chunks:3"}]) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_message()
    assert kinds[0] == "message_start"
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert final.content[0].text == "[up] a-model: stream this chunks:3"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 5


async def test_tool_use_and_tool_results_round_trip(gw: RunningGateway, up: FakeLLM) -> None:
    tools = [{"name": "lookup", "description": "find things",
              "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}]
    async with client(gw) as c:
        first = await c.messages.create(
            model="m", max_tokens=64, tools=tools,
            messages=[{"role": "user", "content": "please tool:lookup"}])
        call = first.content[0]
        assert first.stop_reason == "tool_use"
        assert call.type == "tool_use" and call.name == "lookup"
        assert call.input == {"text": "please tool:lookup"}
        await c.messages.create(model="m", max_tokens=64, tools=tools, messages=[
            {"role": "user", "content": "please tool:lookup"},
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": "42"},
                {"type": "text", "text": "thanks"}]},
        ])
    sent = up.last_request.json
    assert sent["tools"][0]["function"]["parameters"]["type"] == "object"
    assert sent["messages"][1]["tool_calls"][0]["id"] == call.id
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": call.id, "content": "42"}
    assert sent["messages"][3]["content"] == [{"type": "text", "text": "thanks"}]


async def test_a_streamed_tool_call_builds_its_input(gw: RunningGateway) -> None:
    async with client(gw) as c, c.messages.stream(
            model="m", max_tokens=64,
            messages=[{"role": "user", "content": "go tool:search"}]) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert final.content[0].type == "tool_use"
    assert final.content[0].input == {"text": "go tool:search"}


@pytest.mark.parametrize(("word", "error"), [
    ("status:429", anthropic.RateLimitError),
    ("status:400", anthropic.BadRequestError),
    ("status:401", anthropic.AuthenticationError),
    ("status:500", anthropic.InternalServerError),
])
async def test_upstream_errors_map_to_the_sdk_classes(
        gw: RunningGateway, word: str, error: type[Exception]) -> None:
    async with client(gw) as c:
        with pytest.raises(error) as raised:
            await c.messages.create(model="m", max_tokens=8,
                                    messages=[{"role": "user", "content": word}])
    assert isinstance(raised.value, anthropic.APIStatusError)
    assert raised.value.body["type"] == "error"  # type: ignore[index]
    assert "steered status" in raised.value.message


async def test_a_request_without_max_tokens_is_a_400_in_anthropic_shape(
        gw: RunningGateway) -> None:
    async with client(gw) as c:
        with pytest.raises(anthropic.BadRequestError) as raised:
            await c.messages.create(model="m", max_tokens=0,
                                    messages=[{"role": "user", "content": "hi"}])
    assert raised.value.body == {"type": "error", "error": {  # type: ignore[comparison-overlap]
        "type": "invalid_request_error",
        "message": "max_tokens: a positive integer is required"}}


async def test_echo_answers_the_anthropic_sdk(echo_gw: RunningGateway) -> None:
    async with client(echo_gw) as c:
        message = await c.messages.create(model="m", max_tokens=8,
                                          messages=[{"role": "user", "content": "ping"}])
        async with c.messages.stream(model="m", max_tokens=8,
                                     messages=[{"role": "user", "content": "ping"}]) as s:
            streamed = await s.get_final_message()
    assert message.content[0].text == "[e] ping"  # type: ignore[union-attr]
    assert streamed.content[0].text.strip() == "[e] ping"  # type: ignore[union-attr]
