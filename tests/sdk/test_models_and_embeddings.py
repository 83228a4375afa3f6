"""`models.list()` from both SDKs, and embeddings routes balanced over instances."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anthropic
import openai
import pytest
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes import FakeEmbeddings
from tests.semantic.conftest import remote_embeddings, specialists

from semproxy.admin.run import RunningGateway


def client(gw: RunningGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture
async def embed_a() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings() as server:
        yield server


@pytest.fixture
async def embed_b() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings() as server:
        yield server


async def test_a_semantic_route_lists_auto_then_its_instances_models(
        gateway: GatewayFactory, embed_a: FakeEmbeddings) -> None:
    gw = await gateway(route_config(
        specialists(), uri="/v1/*", embeddings=remote_embeddings(embed_a.url),
        balancer={"algorithm": "semantic", "threshold": 0.5}))
    async with client(gw) as c:
        names = [m.id async for m in c.models.list()]
    async with anthropic.AsyncAnthropic(base_url=gw.url, api_key="x", max_retries=0) as a:
        claude_names = [m.id async for m in a.models.list()]
    assert names == claude_names == ["auto", "default-model", "code-model", "translate-model"]


async def test_a_plain_route_lists_only_its_instances_models(echo_gw: RunningGateway) -> None:
    async with client(echo_gw) as c:
        assert [m.id async for m in c.models.list()] == ["e-model"]


async def test_embeddings_fail_over_between_instances(
        gateway: GatewayFactory, embed_a: FakeEmbeddings, embed_b: FakeEmbeddings) -> None:
    gw = await gateway(route_config(
        [instance("a", embed_a.url, options={"model": "emb-a"}),
         instance("b", embed_b.url, options={"model": "emb-b"})],
        uri="/v1/embeddings", fallback_strategy="http_5xx", debug_headers=True))
    async with client(gw) as c:
        first = await c.embeddings.create(model="any", input=["python code", "translate"],
                                          encoding_format="float")
        embed_a.fail_next = [500]
        raws = [await c.embeddings.with_raw_response.create(
            model="any", input="python code", encoding_format="float") for _ in range(2)]
    assert len(first.data) == 2 and first.data[0].embedding[0] == pytest.approx(1.0)
    assert [r.headers.get("X-AI-Failover") for r in raws].count("a>b") == 1
    assert all(r.parse().data[0].embedding[0] == pytest.approx(1.0) for r in raws)
    assert {embed_a.last_request.json["model"], embed_b.last_request.json["model"]} == {
        "emb-a", "emb-b"}


async def test_echo_answers_embeddings_in_the_sdks_default_encoding(
        echo_gw: RunningGateway) -> None:
    async with client(echo_gw) as c:
        one = await c.embeddings.create(model="m", input=["same", "other"])
        two = await c.embeddings.create(model="m", input="same")
    assert one.data[0].embedding == two.data[0].embedding
    assert one.data[0].embedding != one.data[1].embedding
    assert sum(x * x for x in one.data[1].embedding) == pytest.approx(1.0, abs=1e-5)


async def test_an_embeddings_request_to_a_chat_only_route_is_a_400(
        gateway: GatewayFactory) -> None:
    gw = await gateway(route_config([instance("a", None, provider="anthropic")], uri="/v1/*"))
    async with client(gw) as c:
        with pytest.raises(openai.BadRequestError) as raised:
            await c.embeddings.create(model="m", input="x")
    assert "no instance that serves embeddings" in raised.value.message
