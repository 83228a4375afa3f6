"""Soak with faults: a gateway process under steady load while things break around it.

    bash scripts/soak.sh [--minutes N] [--short]

Everything runs on 127.0.0.1. The gateway is a real `semproxy serve` process; the
upstreams are the test suite's fakes (two chat upstreams, one embeddings server),
served from this process. 64 client loops send chat requests, a quarter of them
streamed, to two semantic routes: one embeds in-process (wordllama), one calls the
remote embeddings server. Faults, spread over the run:

  * upstream `a` is stopped, then restarted on the same port;
  * the embeddings server is stopped for a while (the remote route fails open);
  * the config file is rewritten every 10 s (a new version each time).

Upstream `b` is never touched and the routes ask for failover, so every request
has a healthy alternative: any error fails the run. The one exception is a stream that upstream `a` was already
sending when it was killed (nothing can be retried once bytes reached the
client); those must end with a clean error event and are counted apart.

The gateway's RSS and open file descriptors are read from /proc, and its asyncio
task count from the admin /metrics, every 5 s. The report (text on stdout, JSON
with --out) gives requests, errors, growth per 100k requests and the faults.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from tests.fakes import FakeEmbeddings, FakeLLM
from tests.reliability.process import GatewayProcess, free_port

ADMIN_KEY = "soak-admin-key"
CONCURRENCY = 64
SAMPLE_S = 5.0
RELOAD_S = 10.0
PROMPTS = ["write a python function to parse json", "fix the bug in my code",
           "translate this sentence into french", "summarize this paragraph",
           "what is the weather like today", "tell me a joke about cats"]
TASKS = re.compile(rb"^semproxy_event_loop_tasks (\S+)$", re.M)


def route(route_id: str, uri: str, urls: dict[str, str], embeddings: dict[str, Any],
          generation: int) -> dict[str, Any]:
    def upstream(name: str, **extra: Any) -> dict[str, Any]:
        return {"name": name, "provider": "openai-compatible", "weight": 1,
                "override": {"endpoint": urls[name]},
                "options": {"model": f"{name}-g{generation}"}, **extra}

    return {"id": route_id, "uri": uri, "plugins": {"ai-proxy-multi": {
        "balancer": {"algorithm": "semantic", "threshold": 0.3},
        "embeddings": embeddings, "debug_headers": True, "timeout": 5000,
        # A request `a` may have received when it was killed is re-sent to `b` only
        # because the route asks for failover (the gateway never re-sends otherwise).
        "fallback_strategy": "instance_health_and_rate_limiting",
        "instances": [upstream("a", examples=["write a python function", "fix my code"],
                               checks={"passive": {"failures": 2, "window": 5,
                                                   "cooldown": 2}}),
                      upstream("b", catchall=True)]}}}


def gateway_config(urls: dict[str, str], embed_url: str, generation: int) -> dict[str, Any]:
    remote = {"provider": "openai-compatible", "override": {"endpoint": embed_url},
              "timeout": 300, "breaker_failures": 3, "breaker_cooldown": 1.0}
    return {"listen": "127.0.0.1:0", "shutdown_grace": 5,
            "admin": {"listen": "127.0.0.1:0", "key": ADMIN_KEY},
            "routes": [route("local", "/v1/chat/completions", urls, {"provider": "local"},
                             generation),
                       route("remote", "/remote/v1/chat/completions", urls, remote,
                             generation)]}


@dataclass
class Tally:
    sent: int = 0
    ok: int = 0
    streams: int = 0
    errors_with_alternative: int = 0  # must stay 0
    streams_cut_by_kill: int = 0  # clean error event, upstream a killed mid-stream
    unclean: int = 0  # anything not a clean 502/503/504 or error event
    statuses: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def error(self, what: str, unclean: bool, alternative: bool = True) -> None:
        self.statuses[what] = self.statuses.get(what, 0) + 1
        self.unclean += unclean
        self.errors_with_alternative += alternative
        self.streams_cut_by_kill += not alternative
        if len(self.examples) < 10:
            self.examples.append(what)


@dataclass
class Sample:
    at_s: float
    requests: int
    rss_mb: float
    fds: int
    tasks: int | None


class Soak:
    def __init__(self, seconds: float, workdir: Path) -> None:
        self.seconds = seconds
        self.workdir = workdir
        self.tally = Tally()
        self.samples: list[Sample] = []
        self.faults: list[str] = []
        self.a_down = False
        self.started = 0.0
        self.stop = asyncio.Event()

    def note(self, text: str) -> None:
        self.faults.append(f"{time.monotonic() - self.started:6.1f}s {text}")
        print(self.faults[-1], flush=True)

    async def run(self) -> bool:
        ports = {name: free_port() for name in ("a", "b", "embed")}
        self.llm_a, self.llm_b = FakeLLM("a", port=ports["a"]), FakeLLM("b", port=ports["b"])
        self.embed = FakeEmbeddings(port=ports["embed"], dim=16)
        for server in (self.llm_a, self.llm_b, self.embed):
            await server.start()
        self.urls = {"a": self.llm_a.url + "/v1/chat/completions",
                     "b": self.llm_b.url + "/v1/chat/completions"}
        self.gw = GatewayProcess(gateway_config(self.urls, self.embed.url, 0), self.workdir,
                                 env={"PYTHONUNBUFFERED": "1"})
        await self.gw.astart(60)
        try:
            return await self._drive()
        finally:
            code = self.gw.stop()
            self.exit_code = code
            for server in (self.llm_a, self.llm_b, self.embed):
                await server.close()

    async def _drive(self) -> bool:
        self.started = time.monotonic()
        connector = aiohttp.TCPConnector(limit=CONCURRENCY)
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
            self.http = http
            loops = [asyncio.create_task(self._client(i)) for i in range(CONCURRENCY)]
            side = [asyncio.create_task(c) for c in
                    (self._sampler(), self._reloads(), self._faults())]
            await asyncio.sleep(self.seconds)
            self.stop.set()
            await asyncio.gather(*loops, *side)
            await self._sample()
        return self.passed()

    async def _client(self, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            path = rng.choice(["/v1/chat/completions", "/remote/v1/chat/completions"])
            stream = rng.random() < 0.25
            prompt = f"{rng.choice(PROMPTS)} #{rng.randrange(1000)}"
            body = {"model": "auto", "stream": stream,
                    "messages": [{"role": "user", "content": prompt}]}
            self.tally.sent += 1
            try:
                await self._one(path, body, stream)
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.tally.error(f"client {type(exc).__name__}", unclean=True)

    async def _one(self, path: str, body: dict[str, Any], stream: bool) -> None:
        a_was_down = self.a_down
        async with self.http.post(self.gw.url + path, json=body) as resp:
            data = await resp.read()
            if resp.status != 200:
                clean = resp.status in (502, 503, 504) and b'"error"' in data
                self.tally.error(f"http {resp.status}", unclean=not clean)
                return
            if not stream:
                self.tally.ok += 1
                return
            self.tally.streams += 1
            if data.rstrip().endswith(b"data: [DONE]"):
                self.tally.ok += 1
                return
            by_a = resp.headers.get("X-AI-Instance") == "a"
            cut = by_a and (self.a_down or a_was_down or self._recent_kill())
            self.tally.error("stream ended without [DONE]", unclean=b'"error"' not in data,
                             alternative=not cut)

    def _recent_kill(self) -> bool:
        return time.monotonic() - getattr(self, "killed_at", -1e9) < 2.0

    async def _faults(self) -> None:
        span = self.seconds
        down = max(5.0, span * 0.15)
        await self._sleep(span * 0.2)
        if self.stop.is_set():
            return
        self.a_down, self.killed_at = True, time.monotonic()
        await self.llm_a.close()
        self.note("fault: upstream a stopped")
        await self._sleep(down)
        await self.llm_a.start()
        self.a_down = False
        self.note("fault: upstream a restarted")
        await self._sleep(span * 0.5 - span * 0.2 - down)
        if self.stop.is_set():
            return
        await self.embed.close()
        self.note("fault: embeddings server stopped")
        await self._sleep(down)
        await self.embed.start()
        self.note("fault: embeddings server restarted")

    async def _reloads(self) -> None:
        generation = 0
        while not self.stop.is_set():
            await self._sleep(RELOAD_S)
            if self.stop.is_set():
                return
            generation += 1
            self.gw.write_config(gateway_config(self.urls, self.embed.url, generation))
            self.note(f"fault: config reload #{generation}")

    async def _sampler(self) -> None:
        while not self.stop.is_set():
            await self._sample()
            await self._sleep(SAMPLE_S)

    async def _sample(self) -> None:
        tasks = None
        try:  # a session of its own: the load's 64 connections must not starve it
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http, \
                    http.get(self.gw.admin_url + "/metrics",
                             headers={"X-API-KEY": ADMIN_KEY}) as resp:
                found = TASKS.search(await resp.read())
                tasks = int(float(found.group(1))) if found else None
        except (aiohttp.ClientError, TimeoutError) as exc:
            print(f"sample: /metrics unavailable ({type(exc).__name__})", flush=True)
        self.samples.append(Sample(round(time.monotonic() - self.started, 1), self.tally.sent,
                                   round(self.gw.rss_bytes() / 2**20, 1), self.gw.fd_count(),
                                   tasks))

    async def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            try:
                async with asyncio.timeout(seconds):
                    await self.stop.wait()
            except TimeoutError:
                pass

    def growth(self) -> dict[str, float | int | None]:
        """Last sample against the one after warm-up (the second) and against the middle
        one, scaled per 100k requests: caches and pools fill early, so the second half
        shows the steady state, where a leak would keep growing."""
        first, mid, last = (self.samples[min(1, len(self.samples) - 1)],
                            self.samples[len(self.samples) // 2], self.samples[-1])

        def per_100k(since: Sample) -> float:
            return round((last.rss_mb - since.rss_mb) * 100_000
                         / max(last.requests - since.requests, 1), 2)

        return {"rss_mb_per_100k": per_100k(first), "rss_mb_per_100k_second_half": per_100k(mid),
                "rss_mb_start": first.rss_mb, "rss_mb_mid": mid.rss_mb,
                "rss_mb_end": last.rss_mb, "fds_start": first.fds, "fds_mid": mid.fds,
                "fds_end": last.fds, "tasks_start": first.tasks, "tasks_mid": mid.tasks,
                "tasks_end": last.tasks}

    def passed(self) -> bool:
        t = self.tally
        return (t.errors_with_alternative == 0 and t.unclean == 0 and t.sent > 0
                and self.gw.is_alive())

    def report(self, ok: bool) -> dict[str, Any]:
        elapsed = self.samples[-1].at_s if self.samples else 0.0
        return {"passed": ok, "seconds": elapsed, "concurrency": CONCURRENCY,
                "requests_per_second": round(self.tally.sent / max(elapsed, 1e-9)),
                "tally": asdict(self.tally), "growth": self.growth(),
                "faults": self.faults, "gateway_exit_code": self.exit_code,
                "samples": [asdict(s) for s in self.samples]}


def render(report: dict[str, Any]) -> str:
    t, g = report["tally"], report["growth"]
    lines = [
        f"soak: {'PASSED' if report['passed'] else 'FAILED'} after {report['seconds']:.0f} s, "
        f"concurrency {report['concurrency']}, {report['requests_per_second']} req/s",
        f"requests sent {t['sent']}, ok {t['ok']} (streams {t['streams']})",
        f"errors with a healthy alternative {t['errors_with_alternative']}, unclean "
        f"{t['unclean']}, streams cut by the upstream kill {t['streams_cut_by_kill']}",
        f"statuses {t['statuses']}",
        f"RSS {g['rss_mb_start']} -> {g['rss_mb_mid']} -> {g['rss_mb_end']} MB "
        f"({g['rss_mb_per_100k']} MB per 100k requests after warm-up, "
        f"{g['rss_mb_per_100k_second_half']} in the second half)",
        f"fds {g['fds_start']} -> {g['fds_mid']} -> {g['fds_end']}, asyncio tasks "
        f"{g['tasks_start']} -> {g['tasks_mid']} -> {g['tasks_end']} (the last sample is "
        "taken after the load stopped)",
        f"faults injected: {len(report['faults'])}",
        f"gateway exit code after SIGTERM: {report['gateway_exit_code']}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--short", action="store_true", help="45 s, for CI")
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    args = parser.parse_args(argv)
    # The fakes are stopped mid-request on purpose; aiohttp would log each cut as an error.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    seconds = 45.0 if args.short else args.minutes * 60
    with tempfile.TemporaryDirectory(prefix="semproxy-soak-") as tmp:
        soak = Soak(seconds, Path(tmp))
        ok = asyncio.run(soak.run())
        report = soak.report(ok and soak.exit_code == 0)
        if not report["passed"]:
            print(soak.gw.logs()[-3000:], file=sys.stderr)
    print(render(report))
    if args.out:
        args.out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
