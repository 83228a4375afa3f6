"""ActiveChecker against real sockets, plus its pure pieces (URL, headers, tally)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from tests.fakes import FakeLLM

from semproxy.config.schema import ActiveChecks, HealthyChecks, UnhealthyChecks
from semproxy.health.active import ActiveChecker, ProbeTally, parse_headers, probe_url
from semproxy.health.state import HealthState

SCALE = 0.01  # 1 s configured intervals become 10 ms
BOUND = 1.0  # generous upper bound for any expected transition


def checks(**fields: object) -> ActiveChecks:
    return ActiveChecks.model_validate({"timeout": 0.2, **fields})


class Watched:
    """A HealthState whose transitions land in a queue the test can await."""

    def __init__(self, names: list[str]) -> None:
        self.events: asyncio.Queue[tuple[str, bool]] = asyncio.Queue()
        self.state = HealthState(names, listener=lambda n, h: self.events.put_nowait((n, h)))

    async def next_event(self) -> tuple[str, bool]:
        async with asyncio.timeout(BOUND):
            return await self.events.get()


@contextlib.asynccontextmanager
async def running(checker: ActiveChecker) -> AsyncIterator[ActiveChecker]:
    checker.start()
    try:
        yield checker
    finally:
        await checker.stop()


async def wait_for_requests(up: FakeLLM, count: int) -> None:
    async with asyncio.timeout(BOUND):
        while len(up.requests) < count:
            await asyncio.sleep(0.005)


async def test_healthy_upstream_is_probed_on_path_with_headers() -> None:
    watched = Watched(["a"])
    active = checks(http_path="/healthz?deep=1", req_headers=["X-Probe: yes"], host="api.test")
    async with FakeLLM(name="a") as up:
        checker = ActiveChecker(
            watched.state, {"a": (up.url + "/v1", active)}, interval_scale=SCALE
        )
        async with running(checker):
            await wait_for_requests(up, 3)
    assert watched.events.empty()
    assert watched.state.is_healthy("a")
    probe = up.requests[0]
    assert (probe.method, probe.path, probe.query) == ("GET", "/healthz", {"deep": "1"})
    assert probe.headers["X-Probe"] == "yes"
    assert probe.headers["Host"] == "api.test"


async def test_closed_upstream_goes_unhealthy_and_recovers_on_restart() -> None:
    watched = Watched(["a"])
    up = await FakeLLM(name="a").start()
    port = up.port
    checker = ActiveChecker(watched.state, {"a": (up.url, checks())}, interval_scale=SCALE)
    async with running(checker):
        await wait_for_requests(up, 1)
        await up.close()
        assert await watched.next_event() == ("a", False)
        assert not watched.state.is_usable("a")
        async with FakeLLM(name="a2", port=port) as again:
            assert await watched.next_event() == ("a", True)
            assert len(again.requests) == HealthyChecks().successes


async def test_status_500_marks_unhealthy_after_http_failures() -> None:
    hits: list[int] = []

    async def fail(request: web.Request) -> web.Response:
        hits.append(1)
        return web.Response(status=500)

    app = web.Application()
    app.router.add_get("/", fail)
    seen: list[tuple[bool, int]] = []
    state = HealthState(["a"], listener=lambda _, healthy: seen.append((healthy, len(hits))))
    active = checks(unhealthy=UnhealthyChecks(http_failures=3))
    async with TestServer(app, host="127.0.0.1") as server:
        url = str(server.make_url("/"))
        checker = ActiveChecker(state, {"a": (url, active)}, interval_scale=SCALE)
        async with running(checker):
            async with asyncio.timeout(BOUND):
                while not seen:
                    await asyncio.sleep(0.005)
    assert seen[0] == (False, 3)


async def test_hanging_upstream_counts_timeouts() -> None:
    release = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response()

    app = web.Application()
    app.router.add_get("/", hang)
    watched = Watched(["a"])
    active = checks(timeout=0.05, unhealthy=UnhealthyChecks(timeouts=2))
    async with TestServer(app, host="127.0.0.1") as server:
        url = str(server.make_url("/"))
        checker = ActiveChecker(watched.state, {"a": (url, active)}, interval_scale=SCALE)
        async with running(checker):
            assert await watched.next_event() == ("a", False)
        release.set()


async def test_tcp_probe_follows_the_listener() -> None:
    watched = Watched(["a"])
    up = await FakeLLM(name="a").start()
    checker = ActiveChecker(
        watched.state, {"a": (up.url, checks(type="tcp"))}, interval_scale=SCALE
    )
    async with running(checker):
        await asyncio.sleep(5 * SCALE)
        assert watched.state.is_healthy("a")
        await up.close()
        assert await watched.next_event() == ("a", False)
    assert up.requests == []  # a TCP probe sends no HTTP request


async def test_unexpected_error_does_not_end_the_probe_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[bool] = []

    def flaky_listener(name: str, healthy: bool) -> None:
        calls.append(healthy)
        if healthy:
            raise RuntimeError("listener bug")

    state = HealthState(["a"], listener=flaky_listener)
    state.mark("a", False)  # so the checker's first healthy verdict is a transition
    async with FakeLLM(name="a") as up:
        checker = ActiveChecker(state, {"a": (up.url, checks())}, interval_scale=SCALE)
        with caplog.at_level(logging.WARNING, logger="semproxy.health"):
            async with running(checker):
                await wait_for_requests(up, 5)  # probes went on after the error
    assert calls == [False, True]
    assert state.is_healthy("a")  # the mark was applied before the listener raised
    assert "health probe of a failed unexpectedly" in caplog.text


def test_probe_url_keeps_only_scheme_host_port_of_base() -> None:
    url = probe_url("https://api.example.com/v1/chat", checks(http_path="/status"))
    assert str(url) == "https://api.example.com/status"


def test_probe_url_port_override_and_forced_https() -> None:
    url = probe_url("http://10.0.0.5:8080/v1", checks(type="https", port=9443))
    assert str(url) == "https://10.0.0.5:9443/"


def test_probe_url_rejects_base_without_host() -> None:
    with pytest.raises(ValueError, match="no host"):
        probe_url("/relative/only", checks())


def test_parse_headers_splits_on_first_colon_and_host_wins() -> None:
    got = parse_headers(["X-A: 1", "X-Url: http://x:1", "Host: ignored"], "real.host")
    assert got == {"X-A": "1", "X-Url": "http://x:1", "Host": "real.host"}


def test_parse_headers_rejects_lines_without_colon() -> None:
    with pytest.raises(ValueError, match="Name: value"):
        parse_headers(["broken"], None)


def test_tally_needs_consecutive_failures_of_one_kind() -> None:
    tally = ProbeTally(checks(unhealthy=UnhealthyChecks(http_failures=2, tcp_failures=2)))
    assert tally.observe("http_failure") is None
    assert tally.observe("success") is None  # resets the failure counters
    assert tally.observe("http_failure") is None
    assert tally.observe("tcp_failure") is None  # other kind, own counter
    assert tally.observe("ignored") is None
    assert tally.observe("http_failure") is False


def test_tally_needs_consecutive_successes() -> None:
    tally = ProbeTally(checks(healthy=HealthyChecks(successes=2)))
    assert tally.observe("success") is None
    assert tally.observe("timeout") is None  # resets the success counter
    assert tally.observe("success") is None
    assert tally.observe("success") is True


def test_interval_scale_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval_scale"):
        ActiveChecker(HealthState(["a"]), {}, interval_scale=0)
