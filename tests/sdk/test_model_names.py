"""The `model` a client names (issue 24): an instance's model, name or alias picks that
instance (failing over among the instances serving it); `auto` and unknown names leave
the choice to the gateway unless the route is strict; `models.retrieve` answers; a
model that came from the environment is never shown."""

from __future__ import annotations

from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway
from semproxy.config.loader import load_data
from semproxy.errors import ConfigError


def client(gw: RunningGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{gw.url}/v1", api_key="x", max_retries=0)


def served_by(answer: str) -> str:
    return answer.split("]")[0].lstrip("[")


def instances(small: FakeLLM, other: FakeLLM) -> list[dict[str, Any]]:
    return [instance("code", other.url, options={"model": "code-model"}),
            instance("small", small.url, options={"model": "small-model"},
                     aliases=["fast", "gpt-4o-mini"]),
            instance("small-2", other.url, options={"model": "small-model"}),
            instance("general", other.url, options={"model": "general-model"})]


@pytest.fixture
async def two() -> Any:
    async with FakeLLM("small") as small, FakeLLM("other") as other:
        yield small, other


async def ask(c: openai.AsyncOpenAI, model: str) -> str:
    answer = await c.chat.completions.create(model=model, messages=[
        {"role": "user", "content": "hello"}])
    return answer.choices[0].message.content or ""


async def test_a_named_model_name_or_alias_picks_the_instances_serving_it(
        gateway: GatewayFactory, two: tuple[FakeLLM, FakeLLM]) -> None:
    small, other = two
    gw = await gateway(route_config(instances(small, other), uri="/v1/*"))
    async with client(gw) as c:
        by_model = {await ask(c, "small-model") for _ in range(6)}
        by_alias = [await ask(c, "fast") for _ in range(3)]
        by_name = [await ask(c, "general") for _ in range(3)]
        anything = {served_by(await ask(c, name)) for name in ("auto", "nonexistent") * 4}
    # both instances of small-model take turns, and only they
    assert by_model == {"[small] small-model: hello", "[other] small-model: hello"}
    assert by_alias == ["[small] small-model: hello"] * 3
    assert by_name == ["[other] general-model: hello"] * 3
    assert len(anything) > 1  # auto and unknown names: the balancer picks, as before


async def test_failover_stays_among_the_instances_serving_the_model(
        gateway: GatewayFactory, two: tuple[FakeLLM, FakeLLM]) -> None:
    small, other = two
    small.default_status = 503
    gw = await gateway(route_config(instances(small, other), uri="/v1/*",
                                    fallback_strategy="http_5xx", debug_headers=True))
    async with client(gw) as c:
        raw = await c.chat.completions.with_raw_response.create(
            model="small-model", messages=[{"role": "user", "content": "hello"}])
    assert raw.headers["X-AI-Instance"] == "small-2"
    with pytest.raises(openai.APIStatusError) as failed:
        async with client(gw) as c:
            await ask(c, "fast")  # only `small` serves the alias, and it is down
    assert failed.value.status_code == 503
    assert other.calls == 1


async def test_a_strict_route_refuses_a_model_it_does_not_serve(
        gateway: GatewayFactory, two: tuple[FakeLLM, FakeLLM]) -> None:
    small, other = two
    gw = await gateway(route_config(instances(small, other), uri="/v1/*", strict_models=True))
    async with client(gw) as c:
        with pytest.raises(openai.NotFoundError) as refused:
            await ask(c, "gpt-5")
        assert served_by(await ask(c, "auto")) in ("small", "other")
    assert refused.value.code == "model_not_found"
    async with anthropic.AsyncAnthropic(base_url=gw.url, api_key="x", max_retries=0) as claude:
        with pytest.raises(anthropic.NotFoundError) as refused_too:
            await claude.messages.create(model="claude-9", max_tokens=5, messages=[
                {"role": "user", "content": "x"}])
    assert refused_too.value.body == {"type": "error", "error": {
        "type": "not_found_error", "message": "the model 'claude-9' is not served on this route"}}
    assert small.calls + other.calls == 1


async def test_models_retrieve_answers_for_every_name_the_route_serves(
        gateway: GatewayFactory, two: tuple[FakeLLM, FakeLLM]) -> None:
    small, other = two
    gw = await gateway(route_config(instances(small, other), uri="/v1/*"))
    async with client(gw) as c:
        listed = [m.id async for m in c.models.list()]
        found = [(await c.models.retrieve(name)).id for name in ("small-model", "fast", "code")]
        with pytest.raises(openai.NotFoundError):
            await c.models.retrieve("gpt-5")
    assert listed == ["code-model", "small-model", "fast", "gpt-4o-mini", "general-model"]
    assert found == ["small-model", "fast", "code"]
    async with anthropic.AsyncAnthropic(base_url=gw.url, api_key="x", max_retries=0) as claude:
        info = await claude.models.retrieve("gpt-4o-mini")
    assert info.id == "gpt-4o-mini" and info.type == "model"


async def test_a_model_from_the_environment_is_never_shown_or_matched(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    config = route_config([instance("secret", options={"model": "${HIDDEN_MODEL}"}),
                           instance("plain")], uri="/v1/*", strict_models=True)
    gw = await gateway(config, env={"HIDDEN_MODEL": "ft:gpt-4o:acme:internal-7"})
    async with http.get(f"{gw.url}/v1/models") as resp:
        text = await resp.text()
    assert "internal-7" not in text
    assert [m["id"] for m in (await resp.json())["data"]] == ["secret", "plain-model"]
    async with http.get(f"{gw.url}/v1/models/ft:gpt-4o:acme:internal-7") as resp:
        assert resp.status == 404
    async with http.post(f"{gw.url}/v1/chat/completions", json={
            "model": "ft:gpt-4o:acme:internal-7", "messages": [{"role": "user", "content": "x"}]
    }) as resp:
        assert resp.status == 404  # not an oracle for the hidden name either
    async with http.post(f"{gw.url}/v1/chat/completions", json={
            "model": "secret", "messages": [{"role": "user", "content": "x"}]}) as resp:
        assert (await resp.json())["choices"][0]["message"]["content"].startswith("[secret]")


@pytest.mark.parametrize(("alias", "said"), [
    ("auto", "'auto' means 'the gateway picks'"), ("has space", "must be a model name"),
    ("", "at least 1 character")])
def test_aliases_are_checked_when_the_config_loads(alias: str, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_data(route_config([instance("a", aliases=["ok", alias])]), {})
    [error] = refused.value.errors
    assert error.startswith("routes[0].plugins.ai-proxy-multi.instances[0].aliases[1]: ")
    assert said in error
