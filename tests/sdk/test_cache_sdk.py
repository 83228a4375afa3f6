"""Cache hits read by the official SDKs: a stored answer replayed whole or streamed, to the
`openai` SDK (Chat Completions and Responses) and the `anthropic` SDK, whatever mode it was
stored from, parses as the provider's own answer would, with its usage marked cached."""

from __future__ import annotations

import anthropic
import openai
import pytest
from tests.conftest import GatewayFactory
from tests.fakes import FakeLLM
from tests.server.cache_env import cached_config

from semproxy.admin.run import RunningGateway

PROMPT = "what is the tallest mountain in europe"
TEXT = f"[up] a-model: {PROMPT}"
MESSAGES = [{"role": "user", "content": PROMPT}]


@pytest.fixture
async def cached(gateway: GatewayFactory, up: FakeLLM) -> RunningGateway:
    return await gateway(cached_config(up.url))


def openai_client(gw: RunningGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)


@pytest.mark.parametrize("stored_stream", [False, True], ids=["stored-whole", "stored-stream"])
async def test_the_openai_sdk_reads_chat_hits_whole_and_streamed(
        cached: RunningGateway, up: FakeLLM, stored_stream: bool) -> None:
    async with openai_client(cached) as c:
        if stored_stream:
            first = await c.chat.completions.create(model="m", messages=MESSAGES,  # type: ignore[arg-type]
                                                    stream=True)
            [chunk async for chunk in first]
        else:
            await c.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
        await cached.gateway.caches.drain()
        whole = await c.chat.completions.with_raw_response.create(
            model="m", messages=MESSAGES)  # type: ignore[arg-type]
        assert whole.headers["X-AI-Cache-Status"] == "HIT-L1"
        completion = whole.parse()
        assert completion.choices[0].message.content == TEXT
        assert completion.usage is not None and completion.usage.prompt_tokens_details
        assert completion.usage.prompt_tokens_details.cached_tokens == \
            completion.usage.prompt_tokens
        stream = await c.chat.completions.create(
            model="m", messages=MESSAGES, stream=True,  # type: ignore[arg-type]
            stream_options={"include_usage": True})
        chunks = [chunk async for chunk in stream]
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == TEXT
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0
    assert len(up.posts) == 1


async def test_the_openai_sdk_reads_responses_hits(cached: RunningGateway, up: FakeLLM) -> None:
    async with openai_client(cached) as c:
        first = await c.responses.create(model="m", input=PROMPT, stream=True)
        [event async for event in first]
        await cached.gateway.caches.drain()
        response = await c.responses.create(model="m", input=PROMPT)
        assert response.output_text == TEXT and response.status == "completed"
        assert response.usage is not None
        assert response.usage.input_tokens_details.cached_tokens == response.usage.input_tokens
        stream = await c.responses.create(model="m", input=PROMPT, stream=True)
        events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == TEXT  # type: ignore[union-attr]
    assert len(up.posts) == 1


async def test_the_anthropic_sdk_reads_messages_hits(cached: RunningGateway, up: FakeLLM) -> None:
    async with anthropic.AsyncAnthropic(base_url=cached.url, api_key="x", max_retries=0) as c:
        await c.messages.create(model="claude-x", max_tokens=64,
                                messages=MESSAGES)  # type: ignore[arg-type]
        await cached.gateway.caches.drain()
        async with c.messages.stream(model="claude-x", max_tokens=64,
                                     messages=MESSAGES) as stream:  # type: ignore[arg-type]
            kinds = [event.type async for event in stream]
            final = await stream.get_final_message()
        message = await c.messages.create(model="claude-x", max_tokens=64,
                                          messages=MESSAGES)  # type: ignore[arg-type]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert final.content[0].text == TEXT == message.content[0].text  # type: ignore[union-attr]
    assert message.usage.cache_read_input_tokens and message.usage.input_tokens == 0
    assert final.usage.cache_read_input_tokens == message.usage.cache_read_input_tokens
    assert len(up.posts) == 1
