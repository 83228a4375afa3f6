"""Which paths a `/v1/*` route serves (issue 24): unknown endpoints are a 404 that never
reaches an upstream; Anthropic token counting is answered (passed through to Anthropic's
own API, counted locally otherwise); legacy text completions are passed through and
routed on their prompt."""

from __future__ import annotations

from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeAnthropic, FakeLLM
from tests.fakes.anthropic import COUNTED

from semproxy.admin.run import RunningGateway
from semproxy.governance.tokens import count_tokens

UNKNOWN = ["/v1/completions/extra", "/v1/images/generations", "/v1/audio/speech",
           "/v1/foo/bar", "/v1/messages/batches", "/v1/"]


@pytest.mark.parametrize("path", UNKNOWN)
async def test_an_unknown_endpoint_is_a_404_and_never_reaches_an_upstream(
        gw: RunningGateway, up: FakeLLM, http: aiohttp.ClientSession, path: str) -> None:
    async with http.post(f"{gw.url}{path}", json=chat("draw a cat")) as resp:
        assert resp.status == 404
        error = (await resp.json())["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "not_found"
    async with http.post(f"{gw.url}{path}", json=chat("draw a cat"),
                         headers={"anthropic-version": "2023-06-01"}) as resp:
        assert resp.status == 404
        assert (await resp.json()) == {"type": "error", "error": {
            "type": "not_found_error", "message": error["message"]}}
    assert up.calls == 0


async def test_a_route_for_one_exact_path_still_serves_it_as_chat(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    gw = await gateway(route_config([instance("e")], uri="/my-llm"))
    async with http.post(f"{gw.url}/my-llm", json=chat("hi")) as resp:
        assert resp.status == 200
        assert (await resp.json())["object"] == "chat.completion"


def anthropic_client(gw: RunningGateway) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=gw.url, api_key="unused", max_retries=0)


COUNT_REQUEST: dict[str, Any] = {
    "model": "claude-x", "system": "You answer in French.",
    "messages": [{"role": "user", "content": "How many tokens is this sentence?"}],
    "tools": [{"name": "lookup", "input_schema": {"type": "object"}}]}


async def test_count_tokens_is_counted_locally_where_no_instance_can_count(
        gw: RunningGateway, up: FakeLLM) -> None:
    async with anthropic_client(gw) as c:
        counted = await c.messages.count_tokens(**COUNT_REQUEST)
    words = count_tokens("You answer in French.\nHow many tokens is this sentence?")
    assert counted.input_tokens > words  # the text, plus framing and the tool prompt
    assert counted.input_tokens < words + 600
    assert up.calls == 0  # nothing billed: the upstream never saw it


async def test_count_tokens_is_passed_through_to_anthropics_own_api(
        gateway: GatewayFactory) -> None:
    async with FakeAnthropic("claude") as claude:
        inst = {"name": "c", "provider": "anthropic-messages", "weight": 1,
                "options": {"model": "claude-x", "max_tokens": 100, "temperature": 0.2},
                "override": {"endpoint": claude.url}}
        gw = await gateway(route_config([inst], uri="/v1/*"))
        async with anthropic_client(gw) as c:
            counted = await c.messages.count_tokens(**COUNT_REQUEST)
        assert counted.input_tokens == COUNTED
        sent = claude.last_request
    assert sent.path == "/v1/messages/count_tokens"
    assert set(sent.json) == {"model", "system", "messages", "tools"}  # no max_tokens


def openai_client(gw: RunningGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key="unused", max_retries=0)


async def test_legacy_completions_are_passed_through_whole_and_streamed(
        gw: RunningGateway, up: FakeLLM) -> None:
    async with openai_client(gw) as c:
        whole = await c.completions.create(model="a-model", prompt="say hi")
        streamed = await c.completions.create(model="a-model", prompt="say hi", stream=True)
        pieces = [choice.text async for chunk in streamed for choice in chunk.choices]
    assert whole.object == "text_completion"
    assert whole.choices[0].text == "[up] a-model: say hi"
    assert "".join(pieces) == "[up] a-model: say hi"
    assert [r.path for r in up.posts] == ["/v1/completions"] * 2
    assert up.posts[1].json["stream_options"] == {"include_usage": True}


async def test_legacy_completions_are_routed_on_their_prompt(
        gateway: GatewayFactory) -> None:
    route = route_config([
        instance("code", examples=["write a python function", "fix the bug in my code"]),
        instance("default", catchall=True)], uri="/v1/*",
        balancer={"algorithm": "semantic", "threshold": 0.5},
        embeddings={"provider": "local"})
    gw = await gateway(route)
    async with openai_client(gw) as c:
        code = await c.completions.create(model="auto", prompt="write a python function")
        other = await c.completions.create(model="auto", prompt=["what is the weather"])
    assert code.choices[0].text.startswith("[code]")
    assert other.choices[0].text.startswith("[default]")


async def test_a_route_with_no_instance_for_legacy_completions_says_so(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeAnthropic("claude") as claude:
        inst = {"name": "c", "provider": "anthropic-messages", "weight": 1,
                "override": {"endpoint": claude.url}}
        gw = await gateway(route_config([inst], uri="/v1/*"))
        async with http.post(f"{gw.url}/v1/completions", json={"prompt": "x"}) as resp:
            assert resp.status == 400
            assert "completions" in (await resp.json())["error"]["message"]
        assert claude.calls == 0
