"""A watcher, a reload or an admin PUT never dies or answers 500 on bad input.

Whatever a new version does wrong, it is rejected, logged and counted, and the
last good version keeps serving; the next good version is applied as usual.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from tests.config.test_yaml_safety import billion_laughs
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.admin.run import start
from semproxy.config.loader import load_data
from semproxy.config.spec import GatewayConfig

from .conftest import ADMIN_KEY, ServeFactory, eventually, sample, scrape, with_admin

KEY = {"X-API-KEY": ADMIN_KEY}
BAD_PORT = "http://127.0.0.1:99999"


@pytest.fixture
async def llms() -> AsyncIterator[tuple[FakeLLM, FakeLLM]]:
    async with FakeLLM("a") as a, FakeLLM("b") as b:
        yield a, b


async def answer_of(http: aiohttp.ClientSession, url: str) -> str:
    async with http.post(url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
        content: str = (await resp.json())["choices"][0]["message"]["content"]
        return content[1:content.index("]")]


async def test_a_port_out_of_range_is_rejected_and_the_next_good_edit_is_applied(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
) -> None:
    a, b = llms
    served = await serve_file(with_admin(route_config([instance("a", a.url)])))
    watcher = served.running.watcher
    assert watcher is not None
    served.rewrite(with_admin(route_config([instance("b", BAD_PORT)])))
    await eventually(lambda: watcher.status.failed == 1, within=2.0)
    assert watcher.status.last_error == [
        "routes[0].plugins.ai-proxy-multi.instances[0].override.endpoint: Value error, "
        "has a port outside 1-65535 or a malformed host"]
    assert await answer_of(http, served.url) == "a"
    assert sample(await scrape(http, served.admin), "semproxy_config_reload_failures_total") == 1

    served.rewrite(with_admin(route_config([instance("b", b.url)])))
    await eventually(lambda: watcher.status.applied == 1, within=2.0)
    assert await answer_of(http, served.url) == "b"


async def test_admin_put_with_a_port_out_of_range_is_400_naming_the_field(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
) -> None:
    served = await serve_file(with_admin(route_config([instance("a", llms[0].url)])))
    route = {"uri": "/v1/x", "plugins": {"ai-proxy-multi": {
        "instances": [instance("x", BAD_PORT + "/v1")]}}}
    async with http.put(served.admin + "/admin/routes/x", json=route, headers=KEY) as resp:
        assert resp.status == 400
        errors = (await resp.json())["error"]["errors"]
    assert errors[0].startswith("routes[1].plugins.ai-proxy-multi.instances[0].override.endpoint")
    assert await answer_of(http, served.url) == "a"


class FlakySource:
    """A config source whose next `load` raises whatever the test put in `failure`."""

    description = "flaky test source"

    def __init__(self, good: dict[str, Any]) -> None:
        self.document = good
        self.failure: Exception | None = None
        self.pokes: asyncio.Queue[None] = asyncio.Queue()

    async def load(self) -> GatewayConfig:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        return load_data(self.document, {})

    async def changes(self) -> AsyncIterator[None]:
        while True:
            yield await self.pokes.get()

    async def save(self, document: dict[str, Any]) -> None:
        self.document = document

    async def aclose(self) -> None:
        return None


async def test_any_exception_from_a_source_is_counted_and_the_watcher_lives_on(
    http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, b = llms
    source = FlakySource(with_admin(route_config([instance("a", a.url)])))
    running = await start(await source.load(), "127.0.0.1:0", source=source)
    try:
        watcher = running.watcher
        assert watcher is not None
        source.failure = RuntimeError("a bug nobody foresaw")
        source.pokes.put_nowait(None)
        await eventually(lambda: watcher.status.failed == 1, within=2.0)
        assert watcher.status.last_error == [
            "<root>: the config could not be built (RuntimeError)"]
        assert any(r.levelno == logging.ERROR for r in caplog.records)
        assert await answer_of(http, running.url) == "a"

        source.document = with_admin(route_config([instance("b", b.url)]))
        source.pokes.put_nowait(None)
        await eventually(lambda: watcher.status.applied == 1, within=2.0)
        assert await answer_of(http, running.url) == "b"
    finally:
        await running.close()


async def test_hot_reload_refuses_an_alias_bomb_and_keeps_serving(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
) -> None:
    served = await serve_file(route_config([instance("a")]))
    watcher = served.running.watcher
    assert watcher is not None
    served.path.write_text(billion_laughs())
    await eventually(lambda: watcher.status.failed == 1, within=3.0)
    assert "YAML aliases" in watcher.status.last_error[0]
    async with http.post(served.url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200


async def test_a_yaml_error_in_a_reload_never_quotes_the_line(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
) -> None:
    served = await serve_file(with_admin(route_config([instance("a")])))
    served.path.write_text("admin:\n  key: admin-s3cret-in-a-broken-file\n  listen: [oops\n")
    async with http.post(served.admin + "/admin/reload", headers=KEY) as resp:
        assert resp.status == 400
        text = await resp.text()
    assert "s3cret" not in text
    assert "not valid YAML" in text and " at line 4, column 1" in text
