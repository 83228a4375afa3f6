"""Active health checks: background probes per instance, with APISIX `checks.active` semantics.

Each worker process runs its own checker; probes are cheap and keeping them local
avoids any cross-process state. An instance starts out healthy. Consecutive
outcomes are counted per kind: ``healthy.successes`` successes in a row mark it
healthy, and ``unhealthy.http_failures`` / ``timeouts`` / ``tcp_failures`` failures
of one kind in a row mark it unhealthy. A success resets every failure counter; any
failure resets the success counter. Statuses in neither list count as nothing.

HTTP probes go through the transport, to a target made from the instance's own
(its proxy, its TLS files, the route's limits) with the probe's URL, headers,
timeout and certificate check, and a fresh connection each time. A TCP probe
only opens a connection to the instance's host and port.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from yarl import URL

from semproxy.config.schema import ActiveChecks
from semproxy.errors import UpstreamConnectError, UpstreamError, UpstreamTimeoutError
from semproxy.health.state import HealthState
from semproxy.transport.base import Transport
from semproxy.transport.http import AiohttpTransport
from semproxy.transport.target import NetPolicy, Target

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


def probe_target(instance: Target, checks: ActiveChecks) -> Target:
    """The target an HTTP probe calls: the instance's, with the probe's URL and headers,
    its timeout as the deadline of the whole probe, its certificate check, and a new
    connection per probe (a pooled keep-alive socket can outlive a restart or hide a
    listener that no longer accepts connections; a fresh connect is what a probe tests).
    """
    url = probe_url(instance.url, checks)
    net = replace(instance.net, timeout_s=checks.timeout, attempt_timeout_s=checks.timeout,
                  keepalive=False, ssl_verify=checks.https_verify_certificate)
    return Target(url=str(url), headers=parse_headers(checks.req_headers, checks.host),
                  net=net, label=f"health probe of {instance.label or url.host}")


@dataclass(slots=True)
class _Probe:
    """Everything one instance's probe loop needs, resolved once at construction."""

    name: str
    checks: ActiveChecks
    target: Target
    tally: ProbeTally
    healthy: bool = True


class ActiveChecker:
    """Probe every target in the background and report verdicts to ``state``.

    ``targets`` maps an instance name to (its target, or just its base URL, and its
    active checks). Probes go through ``transport``; without one the checker opens
    its own and closes it in `stop`. ``interval_scale`` multiplies the configured
    intervals, which the schema keeps to whole seconds; values below 1 probe more
    often. At most ``checks.concurrency`` probes are in flight at once (the smallest
    value among the targets: one checker serves one route).
    """

    def __init__(
        self,
        state: HealthState,
        targets: Mapping[str, tuple[Target | str, ActiveChecks]],
        transport: Transport | None = None,
        interval_scale: float = 1.0,
    ) -> None:
        if interval_scale <= 0:
            raise ValueError("interval_scale must be positive")
        self._state = state
        self._probes = [self._resolve(name, *target) for name, target in targets.items()]
        self._transport = transport
        self._owned: Transport | None = None
        self._interval_scale = interval_scale
        self._tasks: list[asyncio.Task[None]] = []
        self._concurrency = min((c.concurrency for _, c in targets.values()), default=1)
        self._slots: asyncio.Semaphore | None = None

    def start(self) -> None:
        """Start one probe task per target. Call from a running event loop."""
        if self._tasks:
            return
        if self._transport is None:
            self._transport = self._owned = AiohttpTransport()
        self._slots = asyncio.Semaphore(self._concurrency)
        for probe in self._probes:
            task = asyncio.create_task(self._run(probe), name=f"health-probe:{probe.name}")
            self._tasks.append(task)

    async def stop(self) -> None:
        """Cancel the probe tasks, wait for them to end and close a transport of its own."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        owned, self._owned = self._owned, None
        if owned is not None:
            self._transport = None
            await owned.aclose()

    @staticmethod
    def _resolve(name: str, target: Target | str, checks: ActiveChecks) -> _Probe:
        if isinstance(target, str):
            target = Target(url=target, headers={}, net=NetPolicy())
        return _Probe(name, checks, probe_target(target, checks), ProbeTally(checks))

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
        if self._slots is None:
            raise RuntimeError("ActiveChecker is not started")
        async with self._slots:
            if probe.checks.type == "tcp":
                return await _probe_tcp(probe)
            return await self._probe_http(probe)

    async def _probe_http(self, probe: _Probe) -> Outcome:
        assert self._transport is not None
        try:
            # A redirect is not followed: a 302 is itself a verdict (healthy by default).
            reply = await self._transport.get(probe.target)
        except (UpstreamTimeoutError, TimeoutError):
            return "timeout"
        except (UpstreamConnectError, UpstreamError, OSError):
            return "tcp_failure"
        reply.release()
        return _classify(reply.status, probe.checks)


def _classify(status: int, checks: ActiveChecks) -> Outcome:
    if status in checks.healthy.http_statuses:
        return "success"
    if status in checks.unhealthy.http_statuses:
        return "http_failure"
    return "ignored"


async def _probe_tcp(probe: _Probe) -> Outcome:
    url = URL(probe.target.url)
    host, port = url.host, url.port
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
