"""Active probes go through the transport: an instance's proxy and TLS files apply to them,
and at most `checks.active.concurrency` of a route's probes are in flight at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes.raw import RawServer, answer
from tests.upstream.proxy import LoopbackProxy
from tests.upstream.test_tls import mtls_server_context, tls
from tests.upstream.tls_files import Pki, make_pki

from semproxy.config.schema import ActiveChecks
from semproxy.health.active import ActiveChecker
from semproxy.health.state import HealthState

ACTIVE = {"active": {"type": "http", "http_path": "/health", "timeout": 2}}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(Path(tmp_path_factory.mktemp("pki")))


async def healthy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    writer.write(answer(b"ok", "Content-Type: text/plain"))


@contextlib.asynccontextmanager
async def upstream(script: Callable[..., object] = healthy, **options: object
                   ) -> AsyncIterator[RawServer]:
    async with RawServer(script, **options) as server:  # type: ignore[arg-type]
        yield server


async def until(condition: Callable[[], bool], seconds: float = 3.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.01)


def probes(server: RawServer) -> list[bytes]:
    return [h for h in server.heads if h.startswith(b"GET /health ")]


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                 "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


async def test_a_probe_goes_through_the_instances_proxy(gateway: GatewayFactory) -> None:
    proxy = await LoopbackProxy().start()
    try:
        async with upstream() as up:
            await gateway(route_config([instance("a", up.url, proxy=proxy.url,
                                                 checks=ACTIVE)]))
            await until(lambda: bool(probes(up)))
            assert f"GET http://127.0.0.1:{up.port}/health" in proxy.seen
    finally:
        await proxy.close()


async def test_a_probe_presents_the_instances_client_certificate(
    gateway: GatewayFactory, pki: Pki
) -> None:
    # The upstream requires a client certificate: a probe without the instance's TLS
    # files fails its handshake and would mark a working instance unhealthy.
    active = {"active": {**ACTIVE["active"], "type": "https"}}
    async with upstream(tls=mtls_server_context(pki)) as up:
        gw = await gateway(route_config([instance("a", up.url, tls=tls(pki), checks=active)]))
        await until(lambda: bool(probes(up)))
        assert gw.gateway.table.routes[0].health.is_healthy("a")


async def test_at_most_concurrency_probes_of_a_route_are_in_flight() -> None:
    in_flight, peak = 0, 0

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.2)
        in_flight -= 1
        writer.write(answer(b"ok", "Content-Type: text/plain"))

    active = ActiveChecks.model_validate({"timeout": 1, "concurrency": 1, "http_path": "/health"})
    async with upstream(slow) as up:
        names = ["a", "b", "c"]
        checker = ActiveChecker(HealthState(names), {n: (up.origin, active) for n in names},
                                interval_scale=0.01)
        checker.start()
        try:
            await until(lambda: len(probes(up)) >= 3)
        finally:
            await checker.stop()
    assert peak == 1
