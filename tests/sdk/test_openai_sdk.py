"""The official `openai` SDK against the gateway: chat and responses, streamed or not."""

from __future__ import annotations

import openai
import pytest
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway


def client(gw: RunningGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)


async def test_chat_completions_still_pass_through(gw: RunningGateway) -> None:
    async with client(gw) as c:
        completion = await c.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "[up] a-model: hi"


async def test_a_response_from_a_string_input(gw: RunningGateway, up: FakeLLM) -> None:
    async with client(gw) as c:
        response = await c.responses.create(model="m", input="hello there",
                                             instructions="be brief", max_output_tokens=32)
    assert response.object == "response" and response.status == "completed"
    assert response.output_text == "[up] a-model: hello there"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (4, 4)
    sent = up.last_request.json
    assert sent["messages"] == [{"role": "system", "content": "be brief"},
                                {"role": "user", "content": "hello there"}]
    assert sent["max_tokens"] == 32


async def test_a_streamed_response_ends_with_response_completed(gw: RunningGateway) -> None:
    async with client(gw) as c:
        stream = await c.responses.create(model="m", input="stream chunks:3", stream=True)
        events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress",
                         "response.output_item.added", "response.content_part.added"]
    assert kinds.count("response.output_text.delta") == 3
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output_text == "[up] a-model: stream chunks:3"
    assert final.usage is not None and final.usage.output_tokens == 4


async def test_function_calls_and_their_outputs_round_trip(
        gw: RunningGateway, up: FakeLLM) -> None:
    tools = [{"type": "function", "name": "lookup", "description": "find",
              "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}]
    async with client(gw) as c:
        first = await c.responses.create(model="m", input="please tool:lookup",
                                         tools=tools)  # type: ignore[arg-type]
        call = first.output[0]
        assert call.type == "function_call" and call.name == "lookup"
        assert call.arguments == '{"text":"please tool:lookup"}'
        await c.responses.create(model="m", tools=tools, input=[  # type: ignore[arg-type]
            {"role": "user", "content": "please tool:lookup"},
            {"type": "function_call", "call_id": call.call_id, "name": "lookup",
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "42"},
        ])
    sent = up.last_request.json
    assert sent["tools"][0]["function"]["name"] == "lookup"
    assert sent["messages"][1]["tool_calls"][0]["id"] == call.call_id
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": call.call_id,
                                   "content": "42"}


async def test_a_streamed_function_call_arrives_whole_at_the_end(gw: RunningGateway) -> None:
    async with client(gw) as c:
        stream = await c.responses.create(model="m", input="go tool:search", stream=True)
        events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert "response.function_call_arguments.delta" in kinds
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert done.arguments == '{"text":"go tool:search"}'  # type: ignore[union-attr]
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output[0].type == "function_call"


async def test_previous_response_id_is_a_clear_400(gw: RunningGateway) -> None:
    async with client(gw) as c:
        with pytest.raises(openai.BadRequestError) as raised:
            await c.responses.create(model="m", input="hi", previous_response_id="resp_1")
    assert "does not store responses" in raised.value.message


async def test_upstream_errors_keep_their_status_and_message(gw: RunningGateway) -> None:
    async with client(gw) as c:
        with pytest.raises(openai.RateLimitError) as raised:
            await c.responses.create(model="m", input="status:429")
    assert "steered status 429" in raised.value.message


async def test_echo_answers_responses(echo_gw: RunningGateway) -> None:
    async with client(echo_gw) as c:
        response = await c.responses.create(model="m", input="ping")
        stream = await c.responses.create(model="m", input="ping", stream=True)
        events = [e async for e in stream]
    assert response.output_text == "[e] ping"
    assert events[-1].response.output_text.strip() == "[e] ping"  # type: ignore[union-attr]
