"""A real browser calls the gateway from another origin: with the `cors` plugin the
preflight passes and the page reads the answer; without it the browser refuses."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from tests.conftest import GatewayFactory, instance

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
KEY = "browser-key-123456"

pytestmark = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")

# Runs in the page: a JSON POST with a bearer key (so the browser sends a preflight).
FETCH = """
const [url, key, done] = arguments;
fetch(url, {method: "POST", headers: {"Content-Type": "application/json",
                                      "Authorization": "Bearer " + key},
            body: JSON.stringify({model: "auto", messages: [{role: "user", content: "hi"}]})})
  .then(r => r.json()).then(j => done("ok " + j.choices[0].message.content))
  .catch(e => done("refused " + e.name));
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory(prefix="semproxy-chromium-") as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture
async def page() -> AsyncIterator[str]:
    """A web page on its own origin (another port of 127.0.0.1)."""
    async def index(request: web.Request) -> web.Response:
        return web.Response(text="<html><body>app</body></html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", index)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    await runner.cleanup()


def routes(page: str) -> dict[str, Any]:
    origin = page.rstrip("/")
    plugins = {"ai-proxy-multi": {"instances": [instance("e")]}, "key-auth": {}}
    return {"listen": "127.0.0.1:0",
            "consumers": [{"username": "web", "plugins": {"key-auth": {"key": KEY}}}],
            "routes": [
                {"id": "open", "uri": "/open/*", "plugins": {
                    **plugins, "cors": {"allow_origins": origin}}},
                {"id": "closed", "uri": "/closed/*", "plugins": plugins}]}


async def test_a_browser_on_another_origin_reads_answers_only_where_cors_allows(
        gateway: GatewayFactory, browser: WebDriver, page: str) -> None:
    gw = await gateway(routes(page))

    def call(path: str) -> str:
        browser.get(page)
        return str(browser.execute_async_script(FETCH, f"{gw.url}{path}", KEY))

    opened = await asyncio.to_thread(call, "/open/v1/chat/completions")
    closed = await asyncio.to_thread(call, "/closed/v1/chat/completions")
    assert opened == "ok [e] hi"
    assert closed == "refused TypeError"  # what fetch reports when CORS forbids the read
