"""serve --config FILE: a changed file is validated, built and swapped; a bad one is refused."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeEmbeddings, FakeLLM

from .conftest import ServeFactory, eventually, sample, scrape, with_admin

CHAT = "/v1/chat/completions"


@pytest.fixture
async def llms() -> AsyncIterator[tuple[FakeLLM, FakeLLM]]:
    async with FakeLLM("a") as a, FakeLLM("b") as b:
        yield a, b


async def served_by(http: aiohttp.ClientSession, url: str, text: str = "hi") -> str:
    async with http.post(url + CHAT, json=chat(text)) as resp:
        assert resp.status == 200
        content: str = (await resp.json())["choices"][0]["message"]["content"]
        return content[1:content.index("]")]


async def is_served_by(http: aiohttp.ClientSession, url: str, name: str) -> bool:
    return await served_by(http, url) == name


async def test_a_changed_file_routes_anew_while_in_flight_requests_finish_on_their_version(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
) -> None:
    a, b = llms
    served = await serve_file(route_config([instance("a", a.url)]))
    assert await served_by(http, served.url) == "a"
    in_flight = asyncio.create_task(served_by(http, served.url, "slow:600"))
    await eventually(lambda: a.calls == 2, within=1.0, step=0.01)

    served.rewrite(route_config([instance("b", b.url)]))
    assert await eventually(lambda: is_served_by(http, served.url, "b"), within=1.5) < 1.5
    assert await in_flight == "a"  # started on the old version, finished there


async def test_an_invalid_file_is_refused_logged_and_counted_and_the_old_version_serves(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, b = llms
    served = await serve_file(with_admin(route_config([instance("a", a.url)])))
    watcher = served.running.watcher
    assert watcher is not None
    version = served.running.gateway.table.version
    served.rewrite(with_admin(route_config([instance("b", b.url, weight=-1)])))
    await eventually(lambda: watcher.status.failed == 1, within=1.5)

    assert served.running.gateway.table.version == version
    assert await served_by(http, served.url) == "a"
    assert any("weight" in e for e in watcher.status.last_error)
    rejected = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "routes[0].plugins.ai-proxy-multi.instances[0].weight" in rejected[-1].getMessage()
    assert sample(await scrape(http, served.admin), "semproxy_config_reload_failures_total") == 1

    served.path.write_text("routes: [unclosed")  # not even YAML
    await eventually(lambda: watcher.status.failed == 2, within=1.5)
    assert await served_by(http, served.url) == "a"
    metrics = await scrape(http, served.admin)
    assert sample(metrics, "semproxy_config_reload_failures_total") == 2
    assert sample(metrics, "semproxy_config_info", version=version) == 1

    served.rewrite(with_admin(route_config([instance("b", b.url)])))  # fixed: applied
    assert await eventually(lambda: is_served_by(http, served.url, "b"), within=1.5) < 1.5


async def test_reference_embeddings_are_built_before_the_swap(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
) -> None:
    a, b = llms
    async with FakeEmbeddings() as embed:
        served = await serve_file(route_config([instance("a", a.url)]))
        old = served.running.gateway.table.version
        served.rewrite(route_config(
            [instance("a", a.url), instance("b", b.url, examples=["translate into french"])],
            balancer={"algorithm": "semantic", "threshold": 0.5},
            embeddings={"provider": "openai-compatible", "override": {"endpoint": embed.url}}))
        await eventually(lambda: served.running.gateway.table.version != old, within=1.5)
        # The new version was active only once its example vectors existed.
        assert embed.inputs_seen == ["translate into french"]
        assert await served_by(http, served.url, "translate to french") == "b"
