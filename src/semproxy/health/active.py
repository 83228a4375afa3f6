"""Active health checks: background probes per instance, with APISIX `checks.active` semantics.

Each worker process runs its own checker; probes are cheap and keeping them local
avoids any cross-process state. An instance starts out healthy. Consecutive
outcomes are counted per kind: ``healthy.successes`` successes in a row mark it
healthy, and ``unhealthy.http_failures`` / ``timeouts`` / ``tcp_failures`` failures
of one kind in a row mark it unhealthy. A success resets every failure counter; any
failure resets the success counter. Statuses in neither list count as nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import aiohttp
from yarl import URL

from semproxy.config.schema import ActiveChecks
from semproxy.health.state import HealthState

log = logging.getLogger("semproxy.health")

Outcome = Literal["success", "http_failure", "timeout", "tcp_failure", "ignored"]
_FAILURES: tuple[Outcome, ...] = ("http_failure", "timeout", "tcp_failure")


class ProbeTally:
    """Consecutive probe outcomes of one instance, turned into verdicts."""

    def __init__(self, checks: ActiveChecks) -> None:
        self._checks = checks
        self._successes = 0
        self._failures: dict[Outcome, int] = dict.fromkeys(_FAILURES, 0)

    def observe(self, outcome: Outcome) -> bool | None:
        """Count ``outcome``; True/False once a healthy/unhealthy threshold is reached."""
        if outcome == "success":
            self._failures = dict.fromkeys(_FAILURES, 0)
            self._successes += 1
            return True if self._successes >= self._checks.healthy.successes else None
        if outcome == "ignored":
            return None
        self._successes = 0
        self._failures[outcome] += 1
        return False if self._failures[outcome] >= self._limit(outcome) else None

    def _limit(self, outcome: Outcome) -> int:
        unhealthy = self._checks.unhealthy
        limits = {
            "http_failure": unhealthy.http_failures,
            "timeout": unhealthy.timeouts,
            "tcp_failure": unhealthy.tcp_failures,
        }
        return limits[outcome]


def probe_url(base_url: str, checks: ActiveChecks) -> URL:
    """The URL probed for an instance whose API lives at ``base_url``.

    Only scheme, host and port come from ``base_url``; ``checks.port`` overrides
    the port. The scheme follows ``base_url`` because ``type`` defaults to "http"
    even for https upstreams; ``type: https`` forces TLS.
    """
    base = URL(base_url)
    if not base.host:
        raise ValueError(f"health check base URL has no host: {base_url!r}")
    scheme = "https" if checks.type == "https" else base.scheme
    default_port = 443 if scheme == "https" else 80
    port = checks.port or base.explicit_port or default_port
    return URL.build(scheme=scheme, host=base.host, port=port).join(URL(checks.http_path))


def parse_headers(lines: list[str], host: str | None) -> dict[str, str]:
    """``req_headers`` ("Name: value" strings) as a dict; ``host`` sets the Host header."""
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise ValueError(f"health check header is not 'Name: value': {line!r}")
        headers[name.strip()] = value.strip()
    if host is not None:
        headers["Host"] = host
    return headers


@dataclass(slots=True)
class _Probe:
    """Everything one instance's probe loop needs, resolved once at construction."""

    name: str
    checks: ActiveChecks
    url: URL
    headers: dict[str, str]
    tally: ProbeTally
    healthy: bool = True
    timeout: aiohttp.ClientTimeout = field(init=False)

    def __post_init__(self) -> None:
        self.timeout = aiohttp.ClientTimeout(total=self.checks.timeout)


def fresh_connection_session() -> aiohttp.ClientSession:
    """A session that opens a new connection per probe.

    A pooled keep-alive socket can outlive a restart or hide a listener that no
    longer accepts connections; a fresh connect is what the probe means to test.
    """
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))


class ActiveChecker:
    """Probe every target in the background and report verdicts to ``state``.

    ``targets`` maps an instance name to (its base URL, its active checks).
    ``interval_scale`` multiplies the configured intervals, which the schema keeps
    to whole seconds; values below 1 probe more often. The checker owns the
    session ``session_factory`` makes and closes it in `stop`.
    """

    def __init__(
        self,
        state: HealthState,
        targets: Mapping[str, tuple[str, ActiveChecks]],
        session_factory: Callable[[], aiohttp.ClientSession] = fresh_connection_session,
        interval_scale: float = 1.0,
    ) -> None:
        if interval_scale <= 0:
            raise ValueError("interval_scale must be positive")
        self._state = state
        self._probes = [self._resolve(name, *target) for name, target in targets.items()]
        self._session_factory = session_factory
        self._interval_scale = interval_scale
        self._session: aiohttp.ClientSession | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        """Start one probe task per target. Call from a running event loop."""
        if self._tasks:
            return
        self._session = self._session_factory()
        for probe in self._probes:
            task = asyncio.create_task(self._run(probe), name=f"health-probe:{probe.name}")
            self._tasks.append(task)

    async def stop(self) -> None:
        """Cancel the probe tasks, wait for them to end and close the session."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    @staticmethod
    def _resolve(name: str, base_url: str, checks: ActiveChecks) -> _Probe:
        url = probe_url(base_url, checks)
        headers = parse_headers(checks.req_headers, checks.host)
        return _Probe(name, checks, url, headers, ProbeTally(checks))

    async def _run(self, probe: _Probe) -> None:
        while True:
            await self._step(probe)
            unit = probe.checks.healthy if probe.healthy else probe.checks.unhealthy
            await asyncio.sleep(unit.interval * self._interval_scale)

    async def _step(self, probe: _Probe) -> None:
        try:
            verdict = probe.tally.observe(await self._probe(probe))
            if verdict is not None:
                probe.healthy = verdict
                self._state.mark(probe.name, verdict, source="active")
        # Broad on purpose: this loop is the outermost layer of a background task,
        # and an unexpected error (a bug, a raising listener) must cost one probe,
        # not silently end health checking for this instance until restart.
        except Exception:
            log.warning("health probe of %s failed unexpectedly", probe.name, exc_info=True)

    async def _probe(self, probe: _Probe) -> Outcome:
        if probe.checks.type == "tcp":
            return await _probe_tcp(probe)
        return await self._probe_http(probe)

    async def _probe_http(self, probe: _Probe) -> Outcome:
        if self._session is None:
            raise RuntimeError("ActiveChecker is not started")
        request = self._session.get(
            probe.url,
            headers=probe.headers,
            timeout=probe.timeout,
            allow_redirects=False,  # a 302 is itself a verdict (healthy by default)
            ssl=probe.checks.https_verify_certificate,
        )
        try:
            async with request as response:
                return _classify(response.status, probe.checks)
        except TimeoutError:  # aiohttp's timeout errors subclass it: test before ClientError
            return "timeout"
        except (aiohttp.ClientError, OSError):
            return "tcp_failure"


def _classify(status: int, checks: ActiveChecks) -> Outcome:
    if status in checks.healthy.http_statuses:
        return "success"
    if status in checks.unhealthy.http_statuses:
        return "http_failure"
    return "ignored"


async def _probe_tcp(probe: _Probe) -> Outcome:
    host, port = probe.url.host, probe.url.port
    try:
        async with asyncio.timeout(probe.checks.timeout):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return "timeout"
    except OSError:
        return "tcp_failure"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return "success"
