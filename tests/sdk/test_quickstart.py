"""The README's promise: both SDKs pointed at the quickstart config, routed on meaning."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import orjson
import yaml
from tests.conftest import GatewayFactory

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"


async def test_every_sdk_is_routed_on_meaning_by_the_quickstart(gateway: GatewayFactory) -> None:
    gw = await gateway(yaml.safe_load(QUICKSTART.read_text()))
    async with anthropic.AsyncAnthropic(base_url=gw.url, api_key="x", max_retries=0) as claude:
        raw = await claude.messages.with_raw_response.create(
            model="auto", max_tokens=100,
            messages=[{"role": "user", "content": "write a python function that sorts"}])
    message = await raw.parse()
    assert raw.headers["X-AI-Semantic-Route"] == "code"
    assert message.content[0].text.startswith("[code] ")  # type: ignore[union-attr]
    async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0) as c:
        response = await c.responses.create(model="auto",
                                            input="translate this sentence into french")
        models = [m.id async for m in c.models.list()]
        vectors = await c.embeddings.create(model="auto", input="hello")
    assert response.output_text.startswith("[translate] ")
    assert models == ["auto", "code-model", "small-model", "general-model"]
    assert len(vectors.data[0].embedding) == 8


WEATHER_TOOL = {"name": "get_weather", "description": "the weather in a city",
                "input_schema": {"type": "object", "required": ["city", "unit"], "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer"}}}}


async def test_the_quickstart_shows_tool_translation_to_a_messages_client(
        gateway: GatewayFactory) -> None:
    gw = await gateway(yaml.safe_load(QUICKSTART.read_text()))
    ask = {"model": "auto", "max_tokens": 100, "tools": [WEATHER_TOOL],
           "tool_choice": {"type": "tool", "name": "get_weather"},
           "messages": [{"role": "user", "content": "weather in Paris"}]}
    async with anthropic.AsyncAnthropic(base_url=gw.url, api_key="x", max_retries=0) as claude:
        whole = await claude.messages.create(**ask)
        async with claude.messages.stream(**ask) as stream:
            streamed = await stream.get_final_message()
        any_tool = await claude.messages.create(**{**ask, "tool_choice": {"type": "any"}})
        free = await claude.messages.create(**{**ask, "tool_choice": {"type": "auto"}})
    for message in (whole, streamed, any_tool):
        assert message.stop_reason == "tool_use"
        call = message.content[0]
        assert call.type == "tool_use" and call.name == "get_weather"
        assert call.input == {"city": "weather in Paris", "unit": "celsius", "days": 0}
    assert free.content[0].type == "text"  # nothing required: echo answers in words


async def test_the_quickstart_shows_tool_translation_to_a_responses_client(
        gateway: GatewayFactory) -> None:
    gw = await gateway(yaml.safe_load(QUICKSTART.read_text()))
    tool = {"type": "function", "name": "get_weather", "description": "the weather",
            "parameters": WEATHER_TOOL["input_schema"]}
    async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="x", max_retries=0) as c:
        whole = await c.responses.create(model="auto", input="weather in Paris",
                                         tools=[tool], tool_choice="required")
        async with c.responses.stream(model="auto", input="weather in Paris",
                                      tools=[tool], tool_choice="required") as stream:
            streamed = await stream.get_final_response()
    for response in (whole, streamed):
        call = response.output[0]
        assert call.type == "function_call" and call.name == "get_weather"
        assert orjson.loads(call.arguments) == {"city": "weather in Paris", "unit": "celsius",
                                                "days": 0}
