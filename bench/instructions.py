"""Instructions per request: the gateway and the relay under callgrind, next to req/s.

Entry point: `bash bench/run.sh --instructions [--quick]` (bench/README.md).

Each server (the relay, and semproxy in each set-up) starts under valgrind's
callgrind with instrumentation off (bench/callgrind.py). Once it is up and idle,
every scenario on it runs the same way:

  1. warm-up: `--warmup` requests, not counted (caches, the decision cache of the
     repeated prompts, lazily built objects);
  2. a window: instrumentation on, exactly `--requests` requests at `--concurrency`,
     wait for every answer, instrumentation off, dump. n is what reached the mock
     upstream during the window (nginx logs one line per chat call), checked
     against the answers the client got;
  3. instructions per request = the dump's total / n.

Nothing else talks to the server during a window, so the count is exactly that
load's. `--runs` repeats everything with fresh processes: two runs of one build
agree within about 1% (the report shows each run and the spread). Before the
valgrind part, the same scenarios run natively under wrk (c=64, rounds in rotating
order) for req/s, the figure the instruction count is meant to predict.

Servers run with PYTHONHASHSEED=0 (string hashes, hence dict and set layouts, are
the same in every run) and prompts are the same in every run (bench/prompts.py).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (bench/run.py: processes, mock, gateway configs, wrk)
from callgrind import Callgrind, callgrind_argv, valgrind_missing  # noqa: E402
from instructions_report import (  # noqa: E402
    SCENARIOS,
    SERVERS,
    Measured,
    Scenario,
    Server,
    render,
)
from prompts import LUA, PATHS, BodyMaker, read_prompt_sets  # noqa: E402

CHAT = PATHS["chat"]


# ------------------------------------------------------------------ servers


def server_argv(server: Server, port: int, config: Path | None, upstream: str) -> list[str]:
    if server.kind is None:  # the relay
        return [run.PY, str(HERE / "relay.py"), "--listen", f"127.0.0.1:{port}",
                "--upstream", upstream]
    assert config is not None
    return [run.PY, "-m", "semproxy", "serve", "--config", str(config),
            "--listen", f"127.0.0.1:{port}", *server.flags]


def server_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(run.SRC), "PYTHONHASHSEED": "0"}


def accurate_missing() -> str:
    """Why `model: accurate` cannot run with $PYTHON and the measured source ('' if it can)."""
    code = ("from semproxy.embeddings.minilm_onnx import missing_requirement as m; "
            "print(m() or '')")
    res = subprocess.run([run.PY, "-c", code], env=server_env(), capture_output=True,
                         text=True, timeout=120)
    if res.returncode != 0:
        return f"cannot check the accurate extra: {res.stderr.strip()[-200:]}"
    return res.stdout.strip()


class Started:
    """One server process on its own port (natively or under callgrind)."""

    def __init__(self, procs: run.Procs, server: Server, tmp: Path, upstream: str,
                 tag: str, callgrind: bool, redis_port: int | None = None) -> None:
        self.server = server
        port = run.free_port()
        self.base = f"http://127.0.0.1:{port}"
        config = None
        if server.kind is not None:
            config = tmp / f"{server.key}-{tag}.yaml"  # JSON is valid YAML
            config.write_bytes(orjson.dumps(run.gateway_config(port, server.kind, upstream,
                                                               upstream, redis_port),
                                            option=orjson.OPT_INDENT_2))
        argv = server_argv(server, port, config, upstream)
        self.name = f"{server.key}-{tag}"
        self.cg = None
        if callgrind:
            out = tmp / f"callgrind-{self.name}.out"
            argv = callgrind_argv(out, argv)
        self.proc = procs.start(self.name, argv, server_env())
        if callgrind:
            self.cg = Callgrind(self.proc.pid, out)

    def ready(self, procs: run.Procs, timeout: float) -> str:
        """'' once it answers /healthz and a probe POST with 200, else why not."""
        if not run.wait_ready(self.base + "/healthz", self.proc, timeout):
            tail = procs.log_tail(self.name, 3).replace("\n", " | ")
            code = self.proc.poll()
            why = (f"exited with {code}" if code is not None
                   else f"no /healthz 200 in {timeout:.0f} s")
            return f"{why} (log: {tail[-300:]})"
        body = orjson.dumps({"model": "auto", "messages": [{
            "role": "user", "content": "write a python function that reverses a linked list"}]})
        reason, _ = run.probe(self.base + CHAT, body)
        return reason

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def wait_idle(pid: int, quiet: float = 3.0, busy_share: float = 0.05,
              timeout: float = 900.0) -> bool:
    """Wait until the process uses under `busy_share` of a core for `quiet` seconds:
    background start-up work (the accurate model's reference vectors) is then done."""
    deadline = time.monotonic() + timeout
    last = run.cpu_seconds([pid])
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = run.cpu_seconds([pid])
        if now - last < busy_share * quiet:
            return True
        last = now
    return False


# --------------------------------------------------------------------- load


async def send(url: str, maker: BodyMaker, first: int, count: int, concurrency: int) -> int:
    """Requests `first .. first + count - 1` of `maker`, `concurrency` at a time; the number
    answered 2xx. Every request has finished when it returns."""
    import aiohttp

    todo = iter(range(first, first + count))
    ok = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal ok
        for i in todo:
            async with session.post(url, data=maker.body(i),
                                    headers={"Content-Type": "application/json"}) as resp:
                await resp.read()
                ok += 200 <= resp.status < 300

    timeout = aiohttp.ClientTimeout(total=600)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    return ok


def count_lines(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def measure(started: Started, scenario: Scenario, sets: dict[str, list[str]], hits: Path,
            args: argparse.Namespace, seed: int) -> Measured:
    """Warm-up, then one counted window of `scenario` on a server under callgrind."""
    assert started.cg is not None
    maker = BodyMaker(sets, scenario.prompts, scenario.shape, seed)
    url = started.base + PATHS[scenario.shape]
    requests = max(1, round(args.requests * scenario.share))
    asyncio.run(send(url, maker, 0, args.warmup, args.concurrency))
    wait_idle(started.proc.pid, quiet=1.0)  # e.g. the strong model's queue drains
    before = count_lines(hits)
    started.cg.start_window()
    answered = asyncio.run(send(url, maker, args.warmup, requests, args.concurrency))
    instructions = started.cg.end_window()
    return Measured(instructions, count_lines(hits) - before, answered, scenario.counted_at)


# ------------------------------------------------------------------- phases


def selected(args: argparse.Namespace) -> list[Scenario]:
    keys = set(args.scenarios or [s.key for s in SCENARIOS]) | {"relay"}
    return [s for s in SCENARIOS if s.key in keys]


def skips(scenarios: list[Scenario], redis: int | str | None) -> dict[str, str]:
    """Servers that cannot run here, with the reason (`redis`: the port of the harness's
    redis-server, or why there is none)."""
    out = {}
    why = run.gateway_importable()
    acc = accurate_missing() if not why else ""
    for server in {s.server for s in scenarios if not s.pending}:
        spec = SERVERS[server]
        if spec.kind is not None and why:
            out[server] = f"gateway not runnable ({why})"
        elif spec.needs_accurate and acc:
            out[server] = f"model: accurate unavailable: {acc}"
        elif spec.needs_redis and isinstance(redis, str):
            out[server] = redis
    return out


def measure_rps(procs: run.Procs, tmp: Path, upstream: str, scenarios: list[Scenario],
                skipped: dict[str, str], args: argparse.Namespace) -> dict[str, list[float]]:
    """req/s at c=64 of each scenario, natively, per round (rotating order)."""
    live = [s for s in scenarios if not s.pending and s.server not in skipped]
    servers = {s.server: Started(procs, SERVERS[s.server], tmp, upstream, "native", False,
                                 args.redis_port) for s in live}
    broken = {key: st.ready(procs, 120) for key, st in servers.items()}
    live = [s for s in live if not broken[s.server]]
    for key, reason in broken.items():
        if reason:
            print(f"req/s: {key} skipped: {reason}", flush=True)
    out: dict[str, list[float]] = {s.key: [] for s in live}
    for s in live:  # warm-up
        url = servers[s.server].base + CHAT
        run.run_wrk(url, 64, 1, s.prompts, 1, 1, s.shape)
    for r in range(args.rps_rounds):
        for s in live[r % len(live):] + live[: r % len(live)]:
            url = servers[s.server].base + CHAT
            res = run.run_wrk(url, 64, args.rps_duration, s.prompts, (r + 2) * 10**8, 1,
                              s.shape)
            out[s.key].append(res["rps"] if res["errors"] == 0 else float("nan"))
            print(f"req/s round {r + 1}/{args.rps_rounds} {s.key:14s} {res['rps']:9.1f} "
                  f"errors={int(res['errors'])}", flush=True)
    for st in servers.values():
        st.stop()
    return out


def measure_instructions(procs: run.Procs, tmp: Path, upstream: str, hits: Path,
                         scenarios: list[Scenario], skipped: dict[str, str],
                         args: argparse.Namespace) -> dict[str, list[Measured | str]]:
    """Per scenario, one result (or the reason it has none) per run."""
    sets = read_prompt_sets(LUA.read_text())
    out: dict[str, list[Measured | str]] = {s.key: [] for s in scenarios}
    servers = list(dict.fromkeys(s.server for s in scenarios if not s.pending))
    for r in range(args.runs):
        for key in servers:
            mine = [s for s in scenarios if s.server == key and not s.pending]
            if key in skipped:
                continue
            started = Started(procs, SERVERS[key], tmp, upstream, f"run{r + 1}", True,
                              args.redis_port)
            try:
                reason = started.ready(procs, args.start_timeout)
                if not reason and not wait_idle(started.proc.pid):
                    reason = "still busy after start-up"
                for s in mine:
                    if reason:
                        out[s.key].append(reason)
                        continue
                    seed = (SCENARIOS.index(s) + 1) * 10**8  # the same prompts every run
                    m = measure(started, s, sets, hits, args, seed)
                    out[s.key].append(m)
                    print(f"run {r + 1}/{args.runs} {s.key:14s} {m.per_request / 1000:9.1f}k "
                          f"instructions/request n={m.n} answered={m.answered}",
                          flush=True)
            finally:
                started.stop()
    return out


def ensure_valgrind() -> None:
    if not valgrind_missing():
        return
    if os.geteuid() != 0:
        sys.exit(f"{valgrind_missing()}: run as root or: apt-get install valgrind")
    print("installing valgrind with apt-get", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "valgrind"], check=True, env=env)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="1 run, 60 requests per window, short req/s runs (smoke test)")
    ap.add_argument("--requests", type=int, help="requests per window (default 400)")
    ap.add_argument("--warmup", type=int, help="uncounted requests first (default 50)")
    ap.add_argument("--concurrency", type=int, default=4,
                    help="requests in flight in a window (default 4)")
    ap.add_argument("--runs", type=int, help="fresh processes per scenario (default 2)")
    ap.add_argument("--scenarios", nargs="+", metavar="KEY",
                    help=f"only these (relay always runs): {' '.join(s.key for s in SCENARIOS)}")
    ap.add_argument("--rps-rounds", type=int, help="native req/s rounds (default 3)")
    ap.add_argument("--rps-duration", type=float, help="seconds per wrk run (default 5)")
    ap.add_argument("--no-rps", action="store_true", help="skip the native req/s runs")
    ap.add_argument("--start-timeout", type=float, default=900,
                    help="seconds a server under valgrind may take to answer (default 900)")
    ap.add_argument("--out", help="report file (default bench/instructions.md, "
                                  "bench/out/instructions-quick.md with --quick)")
    args = ap.parse_args(argv)
    quick = args.quick
    args.requests = args.requests or (60 if quick else 400)
    args.warmup = args.warmup if args.warmup is not None else (10 if quick else 50)
    args.runs = args.runs or (1 if quick else 2)
    args.rps_rounds = args.rps_rounds or (1 if quick else 3)
    args.rps_duration = args.rps_duration or (2 if quick else 5)
    args.out = args.out or str(HERE / ("out/instructions-quick.md" if quick
                                       else "instructions.md"))
    return args


def main() -> None:
    args = parse_args()
    started_at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = run.portable_command(os.environ.get("BENCH_ENTRY", "python bench/instructions.py"),
                                   sys.argv[1:])
    ensure_valgrind()
    run.ensure_tools()
    tmp = HERE / "out" / f"instructions-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    tmp.mkdir(parents=True)
    print(f"work dir (configs, logs, callgrind dumps): {tmp}", flush=True)
    scenarios = selected(args)
    procs = run.Procs(tmp)
    hits = tmp / "upstream-hits.log"
    try:
        wants_redis = any(SERVERS[s.server].needs_redis for s in scenarios if not s.pending)
        redis = run.start_redis(procs, tmp) if wants_redis else None
        args.redis_port = redis if isinstance(redis, int) else None
        skipped = skips(scenarios, redis)
        for key, reason in skipped.items():
            print(f"{key}: skipped: {reason}", flush=True)
        port = run.free_port()
        (tmp / "nginx.conf").write_text(run.nginx_conf(tmp, port, run.free_port(), hits))
        nginx = procs.start("nginx", [shutil.which("nginx") or "nginx", "-p", str(tmp), "-c",
                                      str(tmp / "nginx.conf"), "-e",
                                      str(tmp / "nginx-error.log")])
        upstream = f"http://127.0.0.1:{port}"
        if not run.wait_ready(upstream + "/healthz", nginx, 20):
            raise SystemExit(f"nginx did not start:\n{procs.log_tail('nginx')}")
        rps = {} if args.no_rps else measure_rps(procs, tmp, upstream, scenarios, skipped,
                                                 args)
        results = measure_instructions(procs, tmp, upstream, hits, scenarios, skipped, args)
    finally:
        procs.stop_all()
    text = render(scenarios, results, rps, skipped, {
        "started_at": started_at, "command": command, "machine": run.machine(),
        "requests": args.requests, "warmup": args.warmup, "concurrency": args.concurrency,
        "runs": args.runs, "rps_rounds": 0 if args.no_rps else args.rps_rounds,
        "rps_duration": args.rps_duration,
        "valgrind": subprocess.run(["valgrind", "--version"], capture_output=True,
                                   text=True).stdout.strip()})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
