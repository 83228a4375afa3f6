"""Proxies: from HTTP_PROXY/HTTPS_PROXY/NO_PROXY, or a route's or instance's `proxy`.

A real forward proxy runs on loopback: http upstreams go through it as
absolute-form requests, https ones through a CONNECT tunnel (TLS end to end
with the test CA), and NO_PROXY sends a host direct.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import aiohttp
import pytest
from tests.conftest import GatewayFactory, instance, route_config

from .conftest import Raw, ask, completion, ok
from .proxy import LoopbackProxy
from .test_tls import mtls_server_context, pki, tls  # noqa: F401 (pki is a fixture)
from .tls_files import Pki


@pytest.fixture
async def proxy() -> AsyncIterator[LoopbackProxy]:
    server = await LoopbackProxy().start()
    yield server
    await server.close()


async def fine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    writer.write(ok("via proxy"))


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                 "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


async def test_http_proxy_from_the_environment_carries_http_upstream_calls(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, proxy: LoopbackProxy,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    up = await raw(fine)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    gw = await gateway(route_config([instance("a", up.url)]))
    assert await ask(http, gw) == (200, completion("via proxy"))
    assert proxy.seen == [f"POST {up.url}"]


async def test_https_goes_through_a_connect_tunnel_with_tls_to_the_upstream(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, proxy: LoopbackProxy,
    pki: Pki, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    up = await raw(fine, tls=mtls_server_context(pki))
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    gw = await gateway(route_config([instance("a", up.url, tls=tls(pki))]))
    assert await ask(http, gw) == (200, completion("via proxy"))
    assert proxy.seen == [f"CONNECT 127.0.0.1:{up.port}"]


async def test_no_proxy_sends_its_hosts_direct(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, proxy: LoopbackProxy,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    up = await raw(fine)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    gw = await gateway(route_config([instance("a", up.url)]))
    assert await ask(http, gw) == (200, completion("via proxy"))
    assert proxy.seen == []


async def test_an_instance_proxy_setting_with_credentials_wins_over_the_route_and_env(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, proxy: LoopbackProxy,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    up = await raw(fine)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")  # would be refused
    with_user = proxy.url.replace("http://", "http://bob:pw@")
    gw = await gateway(route_config(
        [instance("a", up.url, proxy=with_user), instance("b", up.url, weight=0)],
        proxy=""))  # the route says direct; instance a says through the proxy
    assert await ask(http, gw) == (200, completion("via proxy"))
    assert proxy.seen == [f"POST {up.url}"]
    assert proxy.auth == ["Basic " + base64.b64encode(b"bob:pw").decode()]
