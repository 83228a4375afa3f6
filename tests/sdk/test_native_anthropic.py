"""Instances of provider `anthropic-messages` (Anthropic's own API), asked by both SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import openai
import pytest
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes import FakeAnthropic, FakeLLM

from semproxy.admin.run import RunningGateway


@pytest.fixture
async def claude() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic("claude") as server:
        yield server


@pytest.fixture
async def native(gateway: GatewayFactory, claude: FakeAnthropic) -> RunningGateway:
    inst = {"name": "c", "provider": "anthropic-messages", "weight": 1,
            "options": {"model": "claude-x"},
            "override": {"endpoint": claude.url},
            "auth": {"header": {"x-api-key": "sk-ant-test"}}}
    return await gateway(route_config([inst], uri="/v1/*", fallback_strategy="http_5xx"))


def openai_client(gw: RunningGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)


async def test_an_openai_client_is_served_by_the_native_messages_api(
        native: RunningGateway, claude: FakeAnthropic) -> None:
    async with openai_client(native) as c:
        completion = await c.chat.completions.create(model="m", messages=[
            {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "[claude] claude-x: hi"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens == 10
    sent = claude.last_request
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.json["system"] == "be brief" and sent.json["max_tokens"] == 4096
    assert sent.json["messages"] == [{"role": "user", "content": [{"type": "text",
                                                                    "text": "hi"}]}]


async def test_a_streamed_tool_call_comes_back_as_chat_chunks(native: RunningGateway) -> None:
    async with openai_client(native) as c:
        stream = await c.chat.completions.create(
            model="m", stream=True, messages=[{"role": "user", "content": "go tool:find"}],
            tools=[{"type": "function", "function": {"name": "find", "parameters": {}}}])
        chunks = [chunk async for chunk in stream]
    calls = [tc for ch in chunks for c in ch.choices for tc in c.delta.tool_calls or ()]
    assert calls[0].id == "toolu_1" and calls[0].function.name == "find"  # type: ignore[union-attr]
    assert "".join(tc.function.arguments or "" for tc in calls  # type: ignore[union-attr]
                   ) == '{"text":"go tool:find"}'
    assert [c.finish_reason for ch in chunks for c in ch.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 3


async def test_responses_and_errors_through_the_native_api(native: RunningGateway) -> None:
    async with openai_client(native) as c:
        response = await c.responses.create(model="m", input="hello")
        with pytest.raises(openai.RateLimitError) as raised:
            await c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "status:429"}])
    assert response.output_text == "[claude] claude-x: hello"
    assert raised.value.message.endswith("steered status 429")


async def test_an_anthropic_client_through_a_native_instance_keeps_tools_and_stops(
        native: RunningGateway, claude: FakeAnthropic) -> None:
    async with anthropic.AsyncAnthropic(base_url=native.url, api_key="x", max_retries=0) as c:
        message = await c.messages.create(
            model="m", max_tokens=50, stop_sequences=["END"],
            messages=[{"role": "user", "content": "use tool:calc"}],
            tools=[{"name": "calc", "input_schema": {"type": "object"}}])
        async with c.messages.stream(model="m", max_tokens=50,
                                     messages=[{"role": "user", "content": "hi"}]) as stream:
            streamed = await stream.get_final_message()
        with pytest.raises(anthropic.InternalServerError):
            await c.messages.create(model="m", max_tokens=5,
                                    messages=[{"role": "user", "content": "status:529"}])
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "tool_use"
    assert message.content[0].input == {"text": "use tool:calc"}
    assert claude.posts[0].json["stop_sequences"] == ["END"]
    assert claude.posts[0].json["max_tokens"] == 50
    assert streamed.content[0].text == "[claude] claude-x: hi"  # type: ignore[union-attr]
    assert streamed.usage.input_tokens == 7 and streamed.usage.output_tokens == 3


async def test_an_anthropic_request_reaches_a_native_instance_unchanged(
        native: RunningGateway, claude: FakeAnthropic) -> None:
    content = [{"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                               "data": "notes"}},
               {"type": "text", "text": "summarise", "cache_control": {"type": "ephemeral"}}]
    async with anthropic.AsyncAnthropic(base_url=native.url, api_key="x", max_retries=0) as c:
        message = await c.messages.create(model="m", max_tokens=20, extra_body={"top_k": 5},
                                          messages=[{"role": "user", "content": content}])
    sent = claude.last_request.json
    assert sent["messages"][0]["content"] == content
    assert sent["top_k"] == 5 and sent["model"] == "claude-x"  # options still apply
    assert message.id == "msg_1"  # the upstream's own answer, not a translation
    assert message.content[0].text == "[claude] claude-x: summarise"  # type: ignore[union-attr]


async def test_blocks_chat_cannot_carry_go_only_to_native_instances(
        gateway: GatewayFactory, claude: FakeAnthropic, up: FakeLLM) -> None:
    native_inst = {"name": "c", "provider": "anthropic-messages", "weight": 1,
                   "options": {"model": "claude-x"}, "override": {"endpoint": claude.url}}
    mixed = await gateway(route_config([instance("o", up.url), native_inst], uri="/v1/*"))
    plain = await gateway(route_config([instance("o", up.url)], uri="/v1/*"))
    body = {"model": "m", "max_tokens": 20, "messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "x"}}, {"type": "text", "text": "sum"}]}]}
    for _ in range(3):  # round-robin would pick `o` every other time if it could
        async with anthropic.AsyncAnthropic(base_url=mixed.url, api_key="x",
                                            max_retries=0) as c:
            message = await c.messages.create(**body)  # type: ignore[arg-type]
        assert message.content[0].text.startswith("[claude]")  # type: ignore[union-attr]
    assert up.posts == []
    async with anthropic.AsyncAnthropic(base_url=plain.url, api_key="x", max_retries=0) as c:
        with pytest.raises(anthropic.BadRequestError) as raised:
            await c.messages.create(**body)  # type: ignore[arg-type]
    assert "unsupported block 'document'" in raised.value.message
