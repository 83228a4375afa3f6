"""Fault benchmark: does failover hide broken upstreams from clients, and at what latency?

    PYTHON=/path/to/venv/bin/python bash bench/run.sh --fault          # 20,000 per scenario
    PYTHON=/path/to/venv/bin/python bash bench/run.sh --fault --quick  # 2,000 (smoke run)

Three upstream processes behind one roundrobin route of a real `semproxy serve`:

  a  answers --fail-status (503) to --fail-rate (30 %) of its requests
  b  waits --hang-seconds (2 s) before answering --hang-rate (5 %) of its requests
  c  always healthy

The upstreams are this file run as `fault_bench.py upstream ...` (aiohttp on uvloop,
one fixed chat.completion). Each draws one number from its own seeded RNG per chat
request, so the k-th request an upstream receives always gets the same fate. Faults
are armed only after the warm-up (POST /_bench/arm resets the RNG and the counters),
so warm-up traffic never feeds the gateway's health state.

Scenarios, each with fresh upstreams and a fresh gateway, all at the same concurrency
and request count, their order alternating between rounds:

  healthy            no faults (the baseline)
  faulty             the faults above, passive breaker effectively off (failures: 1e9)
  faulty+passive     the faults above, passive breaker at its defaults (3 in 10 s,
                     10 s cool-down)
  faulty+passive-2s  the same with a 2 s cool-down: a 20,000-request run lasts only a
                     few seconds, less than the default cool-down, so this one shows the
                     probe cycles (probe, re-trip) that a long run goes through

The route: fallback_strategy [http_5xx] (a 503 fails over), timeout 1000 ms (it bounds
connect and every read, so a 2 s hang becomes a timeout and fails over after 1 s),
max_retries 2 (three attempts: every instance once), debug_headers on, so each answer
says which instance served it (X-AI-Instance) and the path of a failover
(X-AI-Failover: a>b>c).

The client is one aiohttp process (uvloop) that sends exactly N requests with C
requests in flight, each with a 30 s total timeout, and records status and latency of
every one. "Lost" is a request that got no HTTP answer at all (exception or client
timeout). Results: bench/fault_results.md; configs and logs: bench/out/fault-<stamp>/.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import random
import shlex
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
FIXED = orjson.dumps({
    "id": "chatcmpl-fault", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 8, "completion_tokens": 1, "total_tokens": 9},
})
FAULT_BODY = orjson.dumps({"error": {"message": "injected fault", "type": "server_error",
                                     "code": "injected"}})
CHAT = "/v1/chat/completions"
NAMES = ("a", "b", "c")
BREAKER_OFF = {"failures": 1_000_000_000, "window": 10, "cooldown": 10}
BREAKER_DEFAULT = {"failures": 3, "window": 10, "cooldown": 10,
                   "http_statuses": [429, 500, 502, 503, 504]}
BREAKER_2S = {**BREAKER_DEFAULT, "cooldown": 2}


# ------------------------------------------------------------------ upstream


def serve_upstream(argv: list[str]) -> None:
    """`fault_bench.py upstream --listen H:P [--fail-rate R --fail-status S]
    [--hang-rate R --hang-seconds S] [--seed N]`: one fast chat upstream."""
    import uvloop
    from aiohttp import web

    ap = argparse.ArgumentParser(prog="fault_bench.py upstream")
    ap.add_argument("--listen", required=True)
    ap.add_argument("--fail-rate", type=float, default=0.0)
    ap.add_argument("--fail-status", type=int, default=503)
    ap.add_argument("--hang-rate", type=float, default=0.0)
    ap.add_argument("--hang-seconds", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--armed", action="store_true",
                    help="inject faults from the start (default: only after POST /_bench/arm)")
    args = ap.parse_args(argv)
    if not 0 <= args.fail_rate + args.hang_rate <= 1:
        ap.error("--fail-rate + --hang-rate must be within [0, 1]")

    rng = random.Random(args.seed)
    st = {"armed": args.armed, "requests": 0, "failed": 0, "hung": 0}

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        st["requests"] += 1
        if st["armed"]:
            draw = rng.random()  # exactly one draw per request: the sequence is the seed's
            if draw < args.fail_rate:
                st["failed"] += 1
                return web.Response(status=args.fail_status, body=FAULT_BODY,
                                    content_type="application/json")
            if draw < args.fail_rate + args.hang_rate:
                st["hung"] += 1
                await asyncio.sleep(args.hang_seconds)
        return web.Response(body=FIXED, content_type="application/json")

    async def arm(request: web.Request) -> web.Response:
        rng.seed(args.seed)
        st.update(armed=True, requests=0, failed=0, hung=0)
        return web.json_response(st)

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(st)

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_post("/_bench/arm", arm)
    app.router.add_get("/_bench/stats", stats)
    app.router.add_post(CHAT, chat)
    host, port = args.listen.rsplit(":", 1)
    uvloop.install()
    web.run_app(app, host=host, port=int(port), access_log=None, print=None,
                backlog=1024)


# -------------------------------------------------------------------- client


@dataclass
class Load:
    status: list[int]        # HTTP status, -1 = lost (no answer)
    latency_ms: list[float]
    path: list[str]          # X-AI-Failover of each request ("" = first attempt answered)
    failover: Counter = field(default_factory=Counter)   # X-AI-Failover path -> count
    served_by: Counter = field(default_factory=Counter)  # X-AI-Instance -> count
    lost_kinds: Counter = field(default_factory=Counter)
    bad_body: int = 0        # 200 whose body is not a chat.completion
    wall_s: float = 0.0


REQ_BODY = orjson.dumps({"model": "auto", "messages": [
    {"role": "user", "content": "say ok"}]})


async def drive(url: str, n: int, conc: int, timeout_s: float) -> Load:
    """Exactly n POSTs, conc in flight; every request's fate recorded."""
    import aiohttp

    load = Load(status=[0] * n, latency_ms=[0.0] * n, path=[""] * n)
    next_i = 0
    headers = {"Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(limit=conc, limit_per_host=conc)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=timeout_s)) as s:
        async def worker() -> None:
            nonlocal next_i
            while next_i < n:  # at most n requests in all
                i = next_i
                next_i += 1
                t0 = time.perf_counter()
                try:
                    async with s.post(url, data=REQ_BODY, headers=headers) as resp:
                        body = await resp.read()
                        status = resp.status
                        path = resp.headers.get("X-AI-Failover")
                        served = resp.headers.get("X-AI-Instance", "?")
                except Exception as exc:  # no HTTP answer: lost
                    load.latency_ms[i] = (time.perf_counter() - t0) * 1000
                    load.status[i] = -1
                    load.lost_kinds[type(exc).__name__] += 1
                    continue
                load.latency_ms[i] = (time.perf_counter() - t0) * 1000
                load.status[i] = status
                load.served_by[served] += 1
                if path:
                    load.failover[path] += 1
                    load.path[i] = path
                if status == 200:
                    try:
                        ok = bool(orjson.loads(body).get("choices"))
                    except (orjson.JSONDecodeError, AttributeError):
                        ok = False
                    load.bad_body += not ok

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(conc)))
        load.wall_s = time.perf_counter() - t0
    return load


def run_load(url: str, n: int, conc: int, timeout_s: float) -> Load:
    import uvloop

    return uvloop.run(drive(url, n, conc, timeout_s))


# -------------------------------------------------------------------- driver


@dataclass
class Scenario:
    key: str
    faults: bool
    passive: dict
    runs: list[dict] = field(default_factory=list)


def gateway_config(port: int, ups: dict[str, str], passive: dict, timeout_ms: int,
                   max_retries: int) -> dict:
    return {"listen": f"127.0.0.1:{port}", "routes": [{
        "id": "fault", "uri": CHAT, "plugins": {"ai-proxy-multi": {
            "balancer": {"algorithm": "roundrobin"},
            "fallback_strategy": ["http_5xx"],
            "max_retries": max_retries,
            "timeout": timeout_ms,
            "debug_headers": True,
            "instances": [{
                "name": name, "provider": "openai-compatible", "weight": 1,
                "options": {"model": "m"}, "override": {"endpoint": url},
                "checks": {"passive": passive},
            } for name, url in ups.items()],
        }}}]}


def http_json(url: str, method: str = "GET") -> dict:
    import urllib.request

    from run import PAGE_OPENER

    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with PAGE_OPENER.open(req, timeout=5) as resp:
        return orjson.loads(resp.read())


def one_run(sc: Scenario, rnd: int, args, workdir: Path) -> dict:
    from run import PY, SRC, Procs, cpu_seconds, free_port, tree, wait_ready

    logdir = workdir / f"r{rnd + 1}-{sc.key}"
    logdir.mkdir(parents=True)
    procs = Procs(logdir)
    try:
        ups = {}
        for idx, name in enumerate(NAMES):
            port = free_port()
            argv = [PY, str(Path(__file__).resolve()), "upstream", "--listen",
                    f"127.0.0.1:{port}", "--seed", str(args.seed + 1000 * rnd + idx)]
            if sc.faults and name == "a":
                argv += ["--fail-rate", str(args.fail_rate), "--fail-status",
                         str(args.fail_status)]
            if sc.faults and name == "b":
                argv += ["--hang-rate", str(args.hang_rate), "--hang-seconds",
                         str(args.hang_seconds)]
            proc = procs.start(f"upstream-{name}", argv)
            ups[name] = f"http://127.0.0.1:{port}"
            if not wait_ready(ups[name] + "/healthz", proc, 20):
                raise SystemExit(f"upstream {name} did not start:\n"
                                 f"{procs.log_tail('upstream-' + name)}")
        gport = free_port()
        cfg = logdir / "gateway.yaml"  # JSON is valid YAML
        cfg.write_bytes(orjson.dumps(gateway_config(gport, ups, sc.passive, args.timeout_ms,
                                                    args.max_retries),
                                     option=orjson.OPT_INDENT_2))
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        gw = procs.start("gateway", [PY, "-m", "semproxy", "serve", "--config", str(cfg),
                                     "--listen", f"127.0.0.1:{gport}"], env)
        base = f"http://127.0.0.1:{gport}"
        if not wait_ready(base + "/healthz", gw, 90):
            raise SystemExit(f"gateway did not start:\n{procs.log_tail('gateway')}")

        # Warm-up with faults disarmed: connections and code paths warm, no health state.
        warm = run_load(base + CHAT, args.warmup, args.concurrency, args.client_timeout)
        if any(s != 200 for s in warm.status):
            raise SystemExit(f"warm-up of {sc.key} had non-200 answers: "
                             f"{Counter(warm.status)}\n{procs.log_tail('gateway')}")
        for url in ups.values():
            http_json(url + "/_bench/arm", "POST")

        pids = tree(gw.pid)
        cpu0 = cpu_seconds(pids)
        load = run_load(base + CHAT, args.requests, args.concurrency, args.client_timeout)
        cpu = cpu_seconds(tree(gw.pid)) - cpu0
        up_stats = {name: http_json(url + "/_bench/stats") for name, url in ups.items()}
        gave_up = sum("giving up after" in line for line in
                      (logdir / "gateway.log").read_text(errors="replace").splitlines())
    finally:
        procs.stop_all()
    return {"round": rnd, "load": load, "upstreams": up_stats, "gw_cpu_s": cpu,
            "gave_up_logged": gave_up}


# -------------------------------------------------------------------- report


def pct(sorted_vals: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_vals:
        return float("nan")
    k = max(1, -(-len(sorted_vals) * q // 100))  # ceil(n * q / 100), at least 1
    return sorted_vals[int(min(k, len(sorted_vals))) - 1]


def summary(runs: list[dict]) -> dict:
    status = [s for r in runs for s in r["load"].status]
    lat = sorted(x for r in runs for x in r["load"].latency_ms)
    out = {
        "requests": len(status),
        "errors": sum(s != 200 for s in status),
        "lost": sum(s == -1 for s in status),
        "bad_body": sum(r["load"].bad_body for r in runs),
        "statuses": Counter(s for s in status if s != 200),
        "p50": pct(lat, 50), "p90": pct(lat, 90), "p99": pct(lat, 99),
        "p999": pct(lat, 99.9), "max": lat[-1] if lat else float("nan"),
        "failovers": sum(sum(r["load"].failover.values()) for r in runs),
        "paths": sum((r["load"].failover for r in runs), Counter()),
        "served": sum((r["load"].served_by for r in runs), Counter()),
        "lost_kinds": sum((r["load"].lost_kinds for r in runs), Counter()),
        "wall_s": sum(r["load"].wall_s for r in runs),
        "gw_cpu_s": sum(r["gw_cpu_s"] for r in runs),
        "gave_up": sum(r["gave_up_logged"] for r in runs),
    }
    for name in NAMES:
        for k in ("requests", "failed", "hung"):
            out[f"{name}_{k}"] = sum(r["upstreams"][name][k] for r in runs)
    return out


def per_round_pct(run: dict, q: float) -> float:
    return pct(sorted(run["load"].latency_ms), q)


def ratio(sc: Scenario, base: Scenario, q: float) -> float:
    """Median over rounds of this round's percentile over the baseline's same round."""
    ref = {r["round"]: per_round_pct(r, q) for r in base.runs}
    vals = sorted(per_round_pct(r, q) / ref[r["round"]] for r in sc.runs
                  if ref.get(r["round"]))
    if not vals:
        return float("nan")
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def f(v: float, digits: int = 1) -> str:
    return "-" if v != v else f"{v:,.{digits}f}"


def machine(py: str, src: Path) -> str:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_mib = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    ver = subprocess.run([py, "-c", "import sys, aiohttp, uvloop; print(sys.version.split()[0], "
                          "'aiohttp', aiohttp.__version__, 'uvloop', uvloop.__version__)"],
                         capture_output=True, text=True).stdout.strip()
    rev = subprocess.run(["git", "-C", str(src), "log", "-1", "--format=%h"],
                         capture_output=True, text=True).stdout.strip() or "?"
    return (f"{cpu}, {os.cpu_count()} logical CPUs, {mem_mib} MiB RAM; "
            f"{platform.system()} {platform.release()}; Python {ver}; gateway at `{rev}`; "
            "client, gateway and the three upstreams share these CPUs")


def by_path(scenarios: list[Scenario]) -> list[str]:
    """Latency of the requests grouped by their failover path (most frequent first)."""
    out = ["", "## Latency by failover path", "",
           "Requests grouped by `X-AI-Failover` (none = the first attempt answered), "
           "all rounds pooled; ms.", "",
           "| scenario | path | requests | p50 | p99 | max |", "|---|---|---:|---:|---:|---:|"]
    for sc in scenarios:
        groups: dict[str, list[float]] = {}
        for r in sc.runs:
            ld = r["load"]
            for st, lat, path in zip(ld.status, ld.latency_ms, ld.path, strict=True):
                if st != -1:
                    groups.setdefault(path or "none", []).append(lat)
        if len(groups) < 2 and sc.key == "healthy":
            continue
        for path, lat in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:8]:
            lat.sort()
            out.append(f"| {sc.key} | `{path}` | {len(lat):,} | {f(pct(lat, 50), 2)} "
                       f"| {f(pct(lat, 99), 1)} | {f(lat[-1], 1)} |")
    return out


def reading(scenarios: list[Scenario], sums: dict, args) -> list[str]:
    """Plain statements derived from the figures above (nothing hand-written per run)."""
    t = args.timeout_ms
    out = ["", "## Reading the numbers", ""]
    base = sums.get("healthy")
    for sc in scenarios:
        s = sums.get(sc.key)
        if not s or not sc.faults:
            continue
        slow = [x for r in sc.runs for x in r["load"].latency_ms if x >= t]
        wall_ms = s["wall_s"] * 1000
        parked = sum(slow) / wall_ms if wall_ms else float("nan")
        share = len(slow) / s["requests"]
        out.append(
            f"- `{sc.key}`: {len(slow):,} requests ({share:.2%}) took {t} ms or more; "
            f"upstream `b` hung {s['b_hung']:,} times, and each hang costs the full route "
            f"timeout before the failover. "
            + (f"That share is above 1 %, so the p99 ({f(s['p99'], 1)} ms) is the timeout "
               "plus one fast round trip: it is set by `timeout`, not by the gateway. "
               if share > 0.01 else
               f"That share is below 1 %, so the p99 ({f(s['p99'], 1)} ms) stays under the "
               "timeout; the timeout shows in p99.9 and max. ")
            + f"`a` answered {args.fail_status} {s['a_failed']:,} times; each of those costs "
            "one extra fast round trip (see the `a>...` paths above).")
        if base:
            out.append(
                f"- `{sc.key}` p50 against `healthy`: the client is a closed loop of "
                f"{args.concurrency}, so its latency follows throughput (Little's law). On "
                f"average {parked:.1f} of the {args.concurrency} slots were parked in a "
                "timeout, leaving the gateway fewer requests in flight than in the healthy "
                f"run, which saturates the CPUs at {f(base['requests'] / base['wall_s'], 0)} "
                "req/s. "
                + ("The faulty p50 below the healthy one is that effect, not faster requests."
                   if s["p50"] < base["p50"] else
                   f"The p50 still rose by {f(s['p50'] - base['p50'], 2)} ms."))
    s0 = sums.get("faulty")
    for sc in scenarios:
        s1 = sums.get(sc.key)
        if not s1 or not sc.faults or sc.passive["failures"] > 1000:
            continue
        cool = sc.passive["cooldown"]
        per_run = s1["wall_s"] / len(sc.runs)
        cycles = (f"each run lasted {per_run:.1f} s, less than the {cool:g} s cool-down, so "
                  "each faulty instance tripped once and was never probed again; the "
                  "figures are the cost of the first trips only"
                  if per_run < cool else
                  f"each run lasted {per_run:.1f} s, room for at most {int(per_run // cool)} "
                  "cool-down(s) "
                  "of a faulty instance, each ended by a probe that either closes the "
                  "breaker (it then takes traffic until it trips again) or re-opens it")
        vs = (f" instead of {s0['a_requests']:,}" if s0 else "",
              f" instead of {s0['b_requests']:,}" if s0 else "",
              f" instead of {s0['failovers']:,}" if s0 else "")
        out.append(
            f"- `{sc.key}`: the breaker sent `a` {s1['a_requests']:,} attempts{vs[0]} and "
            f"`b` {s1['b_requests']:,}{vs[1]}; failovers seen {s1['failovers']:,}{vs[2]}. "
            f"An instance is skipped for {cool:g} s after 3 counted failures; a timeout is "
            f"counted only {t} ms after its request was sent, so `b` keeps taking traffic "
            f"for about that long before it trips. Here {cycles}.")
    return out


def write_report(path: Path, scenarios: list[Scenario], args, command: str,
                 started: str, mach: str) -> None:
    sums = {sc.key: summary(sc.runs) for sc in scenarios if sc.runs}
    base = next((sc for sc in scenarios if sc.key == "healthy" and sc.runs), None)
    n, c = args.requests, args.concurrency
    lines = [
        "# semproxy fault benchmark", "",
        f"Run {started}: {n:,} requests per scenario and round, concurrency {c}, "
        f"{args.rounds} round(s), scenario order alternating between rounds; every "
        "scenario starts fresh upstreams and a fresh gateway.", "",
        f"Machine: {mach}. Load average (1 min) before / after the run: "
        f"{args.load_before:.2f} / {os.getloadavg()[0]:.2f} (well above 0 before the run means "
        "something else was using the CPUs).", "",
        "Command:", "", "```", command, "```", "",
        "## Setup", "",
        f"- Upstream `a` answers {args.fail_status} to {args.fail_rate:.0%} of its requests; "
        f"`b` waits {args.hang_seconds:g} s before answering {args.hang_rate:.0%} of its "
        "requests; `c` is always healthy. Each upstream draws one number per request from "
        "its own seeded RNG, armed after the warm-up.",
        f"- Route: roundrobin over a, b, c (weight 1 each), `fallback_strategy: [http_5xx]`, "
        f"`timeout: {args.timeout_ms}` ms, `max_retries: {args.max_retries}`, "
        "`debug_headers: true`.",
        f"- Why `timeout: {args.timeout_ms}`: the route timeout bounds connect and every "
        f"read, so a {args.hang_seconds:g} s hang becomes a timeout after "
        f"{args.timeout_ms} ms and fails over; with the default 30000 ms the client would "
        "wait the whole hang and no failover would happen. It must stay well above the "
        "normal answer time (a few ms here) or healthy answers would time out too.",
        f"- Why `max_retries: {args.max_retries}`: three attempts, so a request that meets "
        "the 503 of `a` and then the hang of `b` still reaches `c`.",
        "- `faulty`: passive breaker effectively off (`checks.passive.failures: "
        "1000000000`; semproxy always has a passive breaker, so this is how it is "
        "disabled): every failure is absorbed by failover alone.",
        "- `faulty+passive`: passive breaker at its defaults, written out "
        "(`failures: 3, window: 10, cooldown: 10, http_statuses: [429, 500, 502, 503, "
        "504]`): an instance with 3 counted failures within 10 s is skipped for 10 s, "
        "then one probe request decides.",
        "- `faulty+passive-2s`: the same with `cooldown: 2`, so that probe cycles happen "
        "within a run of a few seconds.",
        f"- Client: one aiohttp process on uvloop, exactly {n:,} requests, {c} in flight, "
        f"{args.client_timeout:g} s total timeout per request; status and latency of every "
        f"request recorded. Warm-up: {args.warmup:,} requests before the faults are armed, "
        "not counted.",
        "", "## Client view", "",
        "Latencies in ms, over all requests of all rounds. Errors = answers other than "
        "200 (plus 200s whose body is not a chat.completion); lost = no HTTP answer at all "
        "(also counted in errors). Failovers = answers carrying `X-AI-Failover`.", "",
        "| scenario | requests | client-visible errors (non-200) | error rate | lost "
        "| p50 | p90 | p99 | p99.9 | max | failovers | req/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for sc in scenarios:
        s = sums.get(sc.key)
        if not s:
            continue
        errs = s["errors"] + s["bad_body"]
        lines.append(
            f"| {sc.key} | {s['requests']:,} | {errs:,} | {errs / s['requests']:.3%} "
            f"| {s['lost']:,} | {f(s['p50'], 2)} | {f(s['p90'], 2)} | {f(s['p99'], 1)} "
            f"| {f(s['p999'], 1)} | {f(s['max'], 1)} | {s['failovers']:,} "
            f"| {f(s['requests'] / s['wall_s'], 0)} |")
    if base is not None:
        lines += ["", "Latency against the healthy run (median over rounds of the ratio "
                  "within a round):", "",
                  "| scenario | p50 x healthy | p99 x healthy | p99 added ms |",
                  "|---|---:|---:|---:|"]
        hb = sums["healthy"]
        for sc in scenarios:
            if sc is base or not sc.runs:
                continue
            s = sums[sc.key]
            lines.append(f"| {sc.key} | {f(ratio(sc, base, 50), 2)} "
                         f"| {f(ratio(sc, base, 99), 1)} | {f(s['p99'] - hb['p99'], 1)} |")
    lines += ["", "## Upstream and gateway view", "",
              "Requests each upstream received (including failover attempts), the faults it "
              "injected, which instance served the answers (`X-AI-Instance`), the failover "
              "paths seen (`X-AI-Failover`), and the gateway's CPU time over the measured "
              "requests.", "",
              "| scenario | a recv / 503s | b recv / hangs | c recv | served a / b / c "
              "| failover paths | gateway CPU ms/1k req | `giving up` logs |",
              "|---|---:|---:|---:|---:|---|---:|---:|"]
    for sc in scenarios:
        s = sums.get(sc.key)
        if not s:
            continue
        paths = ", ".join(f"`{p}` {k:,}" for p, k in s["paths"].most_common()) or "-"
        served = " / ".join(f"{s['served'].get(x, 0):,}" for x in NAMES)
        lines.append(
            f"| {sc.key} | {s['a_requests']:,} / {s['a_failed']:,} "
            f"| {s['b_requests']:,} / {s['b_hung']:,} | {s['c_requests']:,} | {served} "
            f"| {paths} | {f(s['gw_cpu_s'] / s['requests'] * 1e6, 0)} | {s['gave_up']} |")
    odd = [(sc.key, s) for sc in scenarios if (s := sums.get(sc.key))
           and (s["statuses"] or s["lost_kinds"] or s["bad_body"])]
    if odd:
        lines += ["", "## Errors in detail", ""]
        for key, s in odd:
            lines.append(f"- {key}: statuses {dict(s['statuses'])}, lost "
                         f"{dict(s['lost_kinds'])}, bad bodies {s['bad_body']}")
    if args.rounds > 1:
        lines += ["", "## Per round", "", "| round | scenario | errors | lost | p50 | p99 |",
                  "|---:|---|---:|---:|---:|---:|"]
        for rnd in range(args.rounds):
            for sc in scenarios:
                for r in sc.runs:
                    if r["round"] != rnd:
                        continue
                    st = r["load"].status
                    lines.append(f"| {rnd + 1} | {sc.key} | {sum(x != 200 for x in st)} "
                                 f"| {sum(x == -1 for x in st)} | {f(per_round_pct(r, 50), 2)} "
                                 f"| {f(per_round_pct(r, 99), 1)} |")
    lines += by_path(scenarios)
    lines += reading(scenarios, sums, args)
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------- main


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "upstream":
        serve_upstream(sys.argv[2:])
        return
    sys.path.insert(0, str(HERE))
    from run import PY, SRC, gateway_importable

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="2,000 requests per scenario, report to bench/out/ (smoke run)")
    ap.add_argument("--requests", "-n", type=int, help="requests per scenario (default 20000)")
    ap.add_argument("--concurrency", "-c", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=int, help="uncounted requests before arming (default 1000)")
    ap.add_argument("--fail-rate", type=float, default=0.30)
    ap.add_argument("--fail-status", type=int, default=503)
    ap.add_argument("--hang-rate", type=float, default=0.05)
    ap.add_argument("--hang-seconds", type=float, default=2.0)
    ap.add_argument("--timeout-ms", type=int, default=1000, help="route timeout")
    ap.add_argument("--max-retries", type=int, default=2)
    ap.add_argument("--client-timeout", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenarios", default="healthy,faulty,faulty+passive,faulty+passive-2s",
                    help="comma-separated subset of the default list")
    ap.add_argument("--out", help="report file (default bench/fault_results.md; "
                                  "--quick: bench/out/fault_results-quick.md)")
    args = ap.parse_args()
    args.requests = args.requests or (2000 if args.quick else 20000)
    args.warmup = args.warmup if args.warmup is not None else (300 if args.quick else 1000)
    if args.requests < 1 or args.concurrency < 1 or not 1 <= args.rounds <= 20:
        ap.error("need --requests >= 1, --concurrency >= 1, 1 <= --rounds <= 20")
    out = Path(args.out) if args.out else (
        HERE / "out" / "fault_results-quick.md" if args.quick else HERE / "fault_results.md")

    every = {"healthy": Scenario("healthy", False, BREAKER_OFF),
             "faulty": Scenario("faulty", True, BREAKER_OFF),
             "faulty+passive": Scenario("faulty+passive", True, BREAKER_DEFAULT),
             "faulty+passive-2s": Scenario("faulty+passive-2s", True, BREAKER_2S)}
    wanted = [k.strip() for k in args.scenarios.split(",") if k.strip()]
    if not wanted or any(k not in every for k in wanted):
        ap.error(f"--scenarios: choose from {', '.join(every)}")
    scenarios = [every[k] for k in wanted]

    why_not = gateway_importable()
    if why_not:
        raise SystemExit(f"gateway not runnable: {why_not}")
    # No PYTHON / SEMPROXY_SRC: the report names no paths of the machine that ran it.
    entry = os.environ.get("BENCH_ENTRY", "python bench/fault_bench.py")
    command = f"{entry} {' '.join(shlex.quote(a) for a in sys.argv[1:])}".strip()
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    workdir = HERE / "out" / f"fault-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    workdir.mkdir(parents=True)
    args.load_before = os.getloadavg()[0]
    print(f"work dir (configs, logs): {workdir}", flush=True)

    for rnd in range(args.rounds):
        order = scenarios if rnd % 2 == 0 else scenarios[::-1]
        for sc in order:
            res = one_run(sc, rnd, args, workdir)
            sc.runs.append(res)
            ld = res["load"]
            lat = sorted(ld.latency_ms)
            print(f"round {rnd + 1}/{args.rounds} {sc.key:17s} n={len(ld.status)} "
                  f"non200={sum(s != 200 for s in ld.status)} "
                  f"lost={sum(s == -1 for s in ld.status)} p50={pct(lat, 50):.2f}ms "
                  f"p99={pct(lat, 99):.1f}ms max={lat[-1]:.1f}ms "
                  f"failovers={sum(ld.failover.values())} wall={ld.wall_s:.1f}s", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_report(out, scenarios, args, command, started, machine(PY, SRC))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
