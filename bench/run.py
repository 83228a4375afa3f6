"""semproxy benchmark: gateway overhead measured against a bare relay and a fast mock.

Entry point: `bash bench/run.sh [--quick]` (see run.sh for the environment).

What runs, all on 127.0.0.1, all stopped at the end:
  nginx       mock upstream: fixed chat.completion and embedding JSON
  mock_py.py  timed SSE stream + batch embeddings (things nginx cannot fake)
  relay.py    minimal aiohttp relay, the reference every ratio is taken against
  semproxy    one process per gateway scenario (skipped if not runnable)
  wrk         load generator (post.lua), one run per scenario and concurrency

Scenarios are run in rounds, each round visiting every scenario once (the
starting scenario rotates), so slow drifts of the machine hit all of them
alike; ratios against the relay are taken within a round, then the median
over rounds is reported. Results go to bench/results.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from mock_py import FIXED, vector  # noqa: E402

PY = os.environ.get("PYTHON") or sys.executable
SRC = Path(os.environ.get("SEMPROXY_SRC") or HERE.parent / "src").resolve()
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

# --------------------------------------------------------------------- data

EXAMPLES = {
    "code": [
        "write a python function that parses a csv file",
        "fix this null pointer exception in my java service",
        "why does my rust code fail the borrow checker here",
        "refactor this javascript callback into async await",
        "write a sql query joining orders with customers",
        "explain this segmentation fault in my c program",
        "add unit tests for this go http handler please",
        "how do I reverse a linked list in place in c++",
        "my docker build fails at the pip install step",
        "convert this bash loop into a python script",
        "what does this regular expression actually match",
        "optimize this slow pandas groupby aggregation",
        "implement binary search over a sorted array of ints",
        "write a kubernetes deployment manifest for nginx",
        "debug this stack trace from a django view function",
        "review my typescript generics for type safety",
    ],
    "writing": [
        "translate this paragraph from english to german",
        "summarize this article in three short sentences",
        "rewrite my cover letter so it sounds more confident",
        "proofread this email to my landlord for grammar",
        "write a short poem about the sea at night",
        "make this product description more persuasive",
        "give me five catchy titles for a travel blog post",
        "turn these meeting notes into a tidy summary",
        "draft a polite reply declining a job offer",
        "write a bedtime story about a curious fox cub",
        "paraphrase this sentence in simpler english words",
        "translate the following menu into spanish for me",
        "suggest a better opening line for my short story",
        "condense this report into an executive summary",
        "write a friendly toast for my sister's wedding",
        "correct the tone of this complaint letter please",
    ],
    "science": [
        "what is the derivative of sine of x squared",
        "explain how photosynthesis turns light into sugar",
        "solve this quadratic equation and show the steps",
        "why is the sky blue during the day but red at dusk",
        "how does a vaccine train the human immune system",
        "compute the probability of two sixes with two dice",
        "explain general relativity to a high school student",
        "what causes the seasons on planet earth each year",
        "prove that the square root of two is irrational",
        "how do black holes form from massive dying stars",
        "what is the half life of carbon fourteen exactly",
        "explain entropy in thermodynamics with an example",
        "integrate x times e to the x from zero to one",
        "how does natural selection drive species evolution",
        "why do metals conduct electricity better than wood",
        "balance this chemical equation for burning methane",
    ],
}
# Prompts embedded by the gateway are short (JSON body < 400 bytes); any
# embedding request of 400 bytes or more is a batch of examples. nginx uses
# that to answer prompts itself and pass batches to mock_py (see nginx_conf).
BATCH_BYTES = 400


@dataclass
class Target:
    name: str
    url: str  # POST target for wrk
    pgid_proc: subprocess.Popen | None = None
    skip: str = ""
    note: str = ""  # routing headers seen by the probe request


@dataclass
class Scenario:
    key: str
    label: str
    target: str
    prompts: str = "fixed"  # post.lua BENCH_PROMPTS
    shape: str = "chat"  # post.lua BENCH_SHAPE; the request path follows it
    runs: dict[int, list[dict]] = field(default_factory=dict)  # concurrency -> per round
    skip: str = ""


# ----------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Procs:
    """Every process the harness started, each in its own session/group."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.started: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        with open(self.logdir / f"{name}.log", "wb") as log:  # the child keeps its own fd
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True, cwd=self.logdir)
        self.started.append((name, proc))
        return proc

    def stop_all(self) -> None:
        for _, proc in reversed(self.started):
            if proc.poll() is None:
                with _quiet():
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 8
        for _, proc in self.started:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with _quiet():
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)

    def log_tail(self, name: str, lines: int = 15) -> str:
        path = self.logdir / f"{name}.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], (ProcessLookupError, PermissionError))


def tree(pid: int) -> list[int]:
    """pid and all its descendants (workers forked or spawned by a master)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo and len(out) < 256:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLK_TCK


def peak_rss_mb(pids: list[int]) -> list[float]:
    out = []
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    out.append(int(line.split()[1]) / 1024)
        except OSError:
            continue
    return out


def http_get_ok(url: str) -> bool:
    try:
        with PAGE_OPENER.open(url, timeout=1) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_ready(url: str, proc: subprocess.Popen | None, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        if http_get_ok(url):
            return True
        time.sleep(0.2)
    return False


def probe(url: str, body: bytes) -> tuple[str, str]:
    """One POST -> (error, note): error '' when it answered 200; note = routing headers."""
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with PAGE_OPENER.open(req, timeout=15) as resp:
            resp.read()
            note = "; ".join(f"{k}: {v}" for k, v in resp.headers.items()
                             if k.lower().startswith("x-ai-"))
            return ("" if resp.status == 200 else f"probe answered {resp.status}"), note
    except urllib.error.HTTPError as exc:
        return f"probe answered {exc.code}: {exc.read()[:200]!r}", ""
    except (urllib.error.URLError, OSError) as exc:
        return f"probe failed: {exc}", ""


# -------------------------------------------------------------------- nginx


def ensure_tools() -> None:
    missing = [t for t in ("wrk", "nginx") if not shutil.which(t)]
    if not missing:
        return
    if os.geteuid() != 0:
        sys.exit(f"missing {missing}; install the Debian packages wrk and nginx-light")
    pkgs = ["wrk" if t == "wrk" else "nginx-light" for t in missing]
    print(f"installing {pkgs} with apt-get", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", *pkgs], check=True, env=env)


def nginx_conf(tmp: Path, port: int, py_port: int, hits: Path | None = None) -> str:
    """The mock's config. `hits`: a file that gets one line (the path) per request the
    mock answers outside /healthz and /v1/embeddings, i.e. per upstream chat call, for
    harnesses that count requests where they arrive (bench/instructions.py)."""
    prompt_vec = vector(EXAMPLES["code"][0])  # prompts then score 1.0 against instance "code"
    emb = orjson.dumps({"object": "list", "model": "e", "data": [
        {"object": "embedding", "index": 0, "embedding": prompt_vec}],
        "usage": {"prompt_tokens": 8, "total_tokens": 8}}).decode()
    chat = FIXED.decode()
    for text in (emb, chat):
        assert "'" not in text and "$" not in text
    hits_log = f"access_log {hits} hits; " if hits is not None else ""
    temp = "\n".join(f"  {k}_temp_path {tmp}/ngx-{k};"
                     for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""# generated by bench/run.py
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  log_format hits '$uri';
{temp}
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  client_body_buffer_size 64k;
  # prompt-sized embedding requests get the fixed vector from nginx itself;
  # larger bodies (example batches at config load) go to mock_py.py, which
  # returns one vector per input with the right indices.
  map $content_length $emb_batch {{
    default 1;
    "~^[0-9]{{1,2}}$" 0;
    "~^[0-3][0-9][0-9]$" 0;
  }}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location = /healthz {{ default_type text/plain; return 200 'ok'; }}
    location = /v1/embeddings {{
      if ($emb_batch) {{ rewrite ^ /_batch_embeddings last; }}
      default_type application/json;
      return 200 '{emb}';
    }}
    location = /_batch_embeddings {{
      internal;
      proxy_pass http://127.0.0.1:{py_port}/v1/embeddings;
    }}
    location / {{ {hits_log}default_type application/json; return 200 '{chat}'; }}
  }}
}}
"""


# ------------------------------------------------------------------ gateway


def instance(name: str, endpoint: str, examples: list[str] | None = None,
             catchall: bool = False) -> dict:
    inst: dict = {"name": name, "provider": "openai-compatible", "weight": 1,
                  "options": {"model": "m"}, "override": {"endpoint": endpoint}}
    if examples:
        inst["examples"] = examples
    if catchall:
        inst["catchall"] = True
    return inst


# Spend governance on the round-robin route (issue 25): a tokens-per-minute limit and a
# monthly money budget, both far above what a run uses (nothing is refused), priced
# instances, and a route default for max_tokens (the bench's Chat bodies send none).
LIMITS = {"default_max_tokens": 256,
          "limits": [{"total_tokens": 10**12, "window": "minute"},
                     {"money": 10**6, "window": "month"}]}
PRICING = {"input": 2.5, "output": 10.0}


def limits_plugin(kind: str, redis_port: int | None) -> dict:
    """`ai-rate-limiting` of the rr-limits kinds: the embedded default (per-host counters
    and the budget in a SQLite file in the server's working directory) or Redis."""
    if kind == "rr-limits":
        return dict(LIMITS)
    if redis_port is None:
        raise ValueError("rr-limits-redis needs a redis-server port")
    return {**LIMITS, "policy": "redis", "redis_host": "127.0.0.1", "redis_port": redis_port}


def gateway_config(port: int, kind: str, mock: str, py_mock: str,
                   redis_port: int | None = None) -> dict:
    if kind in ("rr-limits", "rr-limits-redis"):
        plugin = {"balancer": {"algorithm": "roundrobin"},
                  "instances": [{**instance(n, mock), "pricing": PRICING}
                                for n in ("a", "b", "c")]}
        return {"listen": f"127.0.0.1:{port}",
                "routes": [{"id": kind, "uri": "/v1/*",
                            "plugins": {"ai-proxy-multi": plugin,
                                        "ai-rate-limiting": limits_plugin(kind, redis_port)}}]}
    if kind in ("rr", "rr2", "rr-cache", "rr-cache-exact"):
        plugin = {"balancer": {"algorithm": "roundrobin"},
                  "instances": [instance(n, mock) for n in ("a", "b", "c")]}
    elif kind == "rr-shadow":
        # Served exactly like "rr"; a shadow semantic table (local model) decides
        # every request off the request path, in the gateway's bounded queue.
        groups = list(EXAMPLES.values())
        plugin = {"balancer": {"algorithm": "roundrobin", "shadow": {
                      "threshold": 0.3, "embeddings": {"provider": "local"}, "catchall": "c",
                      "examples": {"a": groups[0], "b": groups[1]}}},
                  "instances": [instance(n, mock) for n in ("a", "b", "c")]}
    elif kind == "stream":
        plugin = {"balancer": {"algorithm": "roundrobin"},
                  "instances": [instance("sse", py_mock)]}
    else:
        embeddings = ({"provider": "local"} if kind in ("local", "local-cache") else
                      {"provider": "local", "model": "accurate"} if kind == "accurate" else
                      {"provider": "openai-compatible", "model": "e",
                       "override": {"endpoint": mock}})
        # expose_scores: the probe request reports the pick, proving the
        # semantic path (not its fail-open fallback) is what gets measured.
        plugin = {"balancer": {"algorithm": "semantic",
                               "threshold": "auto" if kind == "accurate" else 0.3,
                               "expose_scores": True},
                  "embeddings": embeddings,
                  "instances": [instance(n, mock, ex) for n, ex in EXAMPLES.items()]
                  + [instance("default", mock, catchall=True)]}
    plugins: dict = {"ai-proxy-multi": plugin}
    if kind in ("rr-cache", "local-cache"):  # the response cache, both layers, in process
        plugins["ai-cache"] = {"layers": ["exact", "semantic"]}
    elif kind == "rr-cache-exact":  # APISIX's default: the exact layer only
        plugins["ai-cache"] = {}
    return {"listen": f"127.0.0.1:{port}",
            "routes": [{"id": kind, "uri": "/v1/*" if kind == "rr" else "/v1/chat/completions",
                        "plugins": plugins}]}


def start_redis(procs: Procs, tmp: Path) -> int | str:
    """A redis-server on a free loopback port for the Redis scenarios: its port, or why
    there is none (not installed: apt-get install redis-server)."""
    server = shutil.which("redis-server")
    if server is None:
        return "redis-server not installed (apt-get install redis-server)"
    port = free_port()
    proc = procs.start("redis", [server, "--bind", "127.0.0.1", "--port", str(port),
                                 "--dir", str(tmp), "--save", "", "--appendonly", "no"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return port
        except OSError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    return f"redis-server did not start ({procs.log_tail('redis', 3)[-200:]})"


def gateway_importable() -> str:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    code = ("import importlib.util, sys; "
            "sys.exit(0 if importlib.util.find_spec('semproxy.__main__') else 3)")
    try:
        res = subprocess.run([PY, "-c", code], env=env, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {PY}: {exc}"
    if res.returncode == 3:
        return f"no semproxy.__main__ under {SRC}"
    if res.returncode != 0:
        return f"import failed: {res.stderr.decode(errors='replace').strip()[-300:]}"
    return ""


# ---------------------------------------------------------------------- wrk

RESULT_RE = re.compile(r"BENCHRESULT (.*)")


PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages",
         "responses": "/v1/responses"}


def run_wrk(url: str, conc: int, seconds: float, prompts: str, seed: int,
            threads: int, shape: str = "chat") -> dict:
    env = {**os.environ, "BENCH_PROMPTS": prompts, "BENCH_SEED": str(seed),
           "BENCH_MODEL": "auto", "BENCH_SHAPE": shape}
    url = url.replace(PATHS["chat"], PATHS[shape])
    argv = ["wrk", f"-t{min(threads, conc)}", f"-c{conc}", f"-d{max(1, round(seconds))}s",
            "--timeout", "10s", "-s", str(HERE / "post.lua"), url]
    res = subprocess.run(argv, env=env, capture_output=True, text=True,
                         timeout=seconds + 60)
    m = RESULT_RE.search(res.stdout)
    if not m:
        raise RuntimeError(f"wrk gave no result: {res.stdout[-400:]} {res.stderr[-400:]}")
    out = {}
    for kv in m.group(1).split():
        k, v = kv.split("=")
        out[k] = float(v)
    out["errors"] = sum(out[k] for k in out if k.startswith("err_") or k == "non2xx")
    return out


# ---------------------------------------------------------------- streaming

TS_RE = re.compile(rb"ts(\d+)")


async def one_stream(session, url: str) -> dict:
    body = orjson.dumps({"model": "auto", "stream": True,
                         "messages": [{"role": "user", "content": "stream me 200 chunks"}]})
    t_send = time.monotonic_ns()
    ttfb = None
    delays = []
    async with session.post(url, data=body,
                            headers={"Content-Type": "application/json"}) as resp:
        status = resp.status
        async for line in resp.content:
            now = time.monotonic_ns()
            m = TS_RE.search(line)
            if not m:
                continue
            if ttfb is None:
                ttfb = now - t_send
            delays.append(now - int(m.group(1)))
    return {"status": status, "ttfb_ns": ttfb, "delays_ns": delays}


async def stream_batch(url: str, n: int) -> list[dict]:
    import aiohttp

    out = []
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        # Open the keep-alive connection first, so the first TTFB is not a connect.
        warm = orjson.dumps({"model": "auto", "messages": [{"role": "user", "content": "hi"}]})
        try:
            async with session.post(url, data=warm,
                                    headers={"Content-Type": "application/json"}) as resp:
                await resp.read()
        except Exception:  # the measured streams below report the failure
            pass
        for _ in range(n):
            try:
                out.append(await one_stream(session, url))
            except Exception as exc:  # reported, never fatal
                out.append({"status": -1, "error": repr(exc), "ttfb_ns": None,
                            "delays_ns": []})
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


# ------------------------------------------------------------------- report


def fmt(v: float | None, digits: int = 0, suffix: str = "") -> str:
    if v is None or v != v:
        return "-"
    return f"{v:,.{digits}f}{suffix}"


def median(vals: list[float]) -> float:
    vals = [v for v in vals if v == v]
    return statistics.median(vals) if vals else float("nan")


def portable_command(entry: str, args: list[str]) -> str:
    """The command as anyone would type it in a checkout: no interpreter or checkout
    paths of the machine that ran it (PYTHON and SEMPROXY_SRC stay out)."""
    return f"{entry} {' '.join(shlex.quote(a) for a in args)}".strip()


def source_revision(src: Path, width: int = 72) -> str:
    """`<short id> <subject>`, the subject cut to `width` characters."""
    out = subprocess.run(["git", "-C", str(src), "log", "-1", "--format=%h %s"],
                         capture_output=True, text=True).stdout.strip() or "?"
    return out if len(out) <= width else out[:width - 3].rstrip() + "..."


def source_place(src: Path) -> str:
    """Where the measured source was, relative to this checkout, never a machine path."""
    try:
        return f"{src.relative_to(HERE.parent)}/"
    except ValueError:
        return "SEMPROXY_SRC (another checkout)"


def machine() -> list[str]:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = Path("/proc/meminfo").read_text().split()[1]
    pyver = subprocess.run([PY, "-c", "import sys, aiohttp; print(sys.version.split()[0], "
                            "'aiohttp', aiohttp.__version__)"],
                           capture_output=True, text=True).stdout.strip()
    ngx = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    wrkv = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    wrkv = (wrkv.stdout or wrkv.stderr).splitlines()[0].split(" Copyright")[0]
    gw_rev = source_revision(SRC)
    return [
        f"- CPU: {cpu}, {os.cpu_count()} logical CPUs; RAM {int(mem) // 1024} MiB",
        f"- Kernel: {platform.system()} {platform.release()}",
        f"- Python: {pyver}",
        f"- {ngx}; {wrkv}",
        f"- Gateway source: {source_place(SRC)} at `{gw_rev}`",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 round x 3 s (smoke test)")
    ap.add_argument("--rounds", type=int, help="rounds over all scenarios (default 3)")
    ap.add_argument("--duration", type=float, help="seconds per wrk run (default 10)")
    ap.add_argument("--streams", type=int, help="SSE streams per target per round (default 5)")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("WRK_THREADS", "1")),
                    help="wrk threads (default 1, or $WRK_THREADS)")
    ap.add_argument("--no-micro", action="store_true",
                    help="skip routing_micro.py and request_costs.py")
    ap.add_argument("--only", nargs="+", metavar="KEY",
                    help="run only these scenarios (relay always runs), e.g. sem-acc-miss")
    ap.add_argument("--out", default=str(HERE / "results.md"))
    args = ap.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    duration = args.duration or (3 if args.quick else 10)
    warm = 1 if args.quick else 3
    n_streams = args.streams or (2 if args.quick else 5)
    started_at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = portable_command(os.environ.get("BENCH_ENTRY", "python bench/run.py"), sys.argv[1:])

    ensure_tools()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    tmp = HERE / "out" / f"run-{stamp}"
    tmp.mkdir(parents=True)
    print(f"work dir (configs, logs): {tmp}", flush=True)
    procs = Procs(tmp)
    try:
        report = run_all(args, procs, tmp, rounds, duration, warm, n_streams)
    finally:
        procs.stop_all()
    micro = "" if args.no_micro else run_micro(args.quick)
    write_report(Path(args.out), report, micro, command, started_at, rounds, duration,
                 n_streams, args.threads)
    print(f"wrote {args.out}")


def run_all(args, procs: Procs, tmp: Path, rounds: int, duration: float, warm: float,
            n_streams: int) -> dict:
    mock_port, py_port, relay_port = free_port(), free_port(), free_port()
    mock = f"http://127.0.0.1:{mock_port}"
    py_mock = f"http://127.0.0.1:{py_port}"
    chat = "/v1/chat/completions"

    procs.start("mock_py", [PY, str(HERE / "mock_py.py"), "--listen", f"127.0.0.1:{py_port}",
                            "--chunks", "200", "--interval-ms", "5"])
    (tmp / "nginx.conf").write_text(nginx_conf(tmp, mock_port, py_port))
    nginx = procs.start("nginx", ["nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf"),
                                  "-e", str(tmp / "nginx-error.log")])
    relay = procs.start("relay", [PY, str(HERE / "relay.py"), "--listen",
                                  f"127.0.0.1:{relay_port}", "--upstream", mock])
    targets = {
        "mock": Target("mock", mock + chat, nginx),
        "relay": Target("relay", f"http://127.0.0.1:{relay_port}{chat}", relay),
    }
    for name, url, proc in (("mock_py", py_mock, None), ("mock", mock, nginx),
                            ("relay", f"http://127.0.0.1:{relay_port}", relay)):
        if not wait_ready(url + "/healthz", proc, 20):
            raise SystemExit(f"{name} did not start:\n{procs.log_tail(name)}")

    why_not = gateway_importable()
    gw_kinds = {"gw-rr": "rr", "gw-local": "local", "gw-remote": "remote",
                "gw-rr2": "rr2", "gw-stream": "stream", "gw-accurate": "accurate",
                "gw-rr-shadow": "rr-shadow", "gw-rr-limits": "rr-limits",
                "gw-rr-limits-redis": "rr-limits-redis", "gw-rr-cache": "rr-cache",
                "gw-rr-cache-exact": "rr-cache-exact", "gw-local-cache": "local-cache"}
    redis = start_redis(procs, tmp)
    for name, kind in gw_kinds.items():
        port = free_port()
        t = Target(name, f"http://127.0.0.1:{port}{chat}")
        targets[name] = t
        if why_not:
            t.skip = f"skipped: gateway not runnable ({why_not})"
            continue
        if kind == "rr-limits-redis" and isinstance(redis, str):
            t.skip = f"skipped: {redis}"
            continue
        cfg = tmp / f"{name}.yaml"  # JSON is valid YAML
        cfg.write_bytes(orjson.dumps(gateway_config(
            port, kind, mock, py_mock, redis if isinstance(redis, int) else None),
            option=orjson.OPT_INDENT_2))
        argv = [PY, "-m", "semproxy", "serve", "--config", str(cfg),
                "--listen", f"127.0.0.1:{port}"]
        if kind == "rr2":
            argv += ["--workers", "2"]
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        t.pgid_proc = procs.start(name, argv, env)
    for t in targets.values():
        if t.skip or t.name in ("mock", "relay"):
            continue
        base = t.url[: -len(chat)]
        if not wait_ready(base + "/healthz", t.pgid_proc, 90):
            tail = procs.log_tail(t.name, 3).replace("\n", " | ")
            t.skip = f"skipped: gateway not runnable (no /healthz 200; log: {tail[-300:]})"
    for t in targets.values():
        if t.skip or t.name == "gw-stream":
            continue
        body = orjson.dumps({"model": "auto", "messages": [{
            "role": "user", "content": "write a python function that reverses a linked list"}]})
        reason, t.note = probe(t.url, body)
        if reason:
            t.skip = f"skipped: {reason}"
    for t in targets.values():
        if t.skip:
            print(f"{t.name}: {t.skip}", flush=True)

    scenarios = [
        Scenario("direct", "1 direct to mock (floor)", "mock"),
        Scenario("relay", "2 aiohttp relay (reference)", "relay"),
        Scenario("rr", "3 semproxy roundrobin x3", "gw-rr"),
        Scenario("rr-msg", "3m same route, Anthropic Messages client", "gw-rr",
                 shape="messages"),
        Scenario("rr-resp", "3r same route, OpenAI Responses client", "gw-rr",
                 shape="responses"),
        Scenario("sem-miss", "4a semantic local, varied prompts (cache miss)", "gw-local",
                 "varied"),
        Scenario("sem-hit", "4b semantic local, 8 prompts (cache hit)", "gw-local", "small"),
        Scenario("sem-acc-miss", "4c semantic model: accurate, varied prompts (cache miss)",
                 "gw-accurate", "varied"),
        Scenario("sem-acc-hit", "4d semantic model: accurate, 8 prompts (cache hit)",
                 "gw-accurate", "small"),
        Scenario("sem-remote", "5 semantic, remote embeddings mock", "gw-remote", "varied"),
        Scenario("rr2", "6 semproxy roundrobin, --workers 2", "gw-rr2"),
        Scenario("rr-shadow", "7 roundrobin x3 with a shadow semantic table, varied prompts",
                 "gw-rr-shadow", "varied"),
        Scenario("rr-limits", "8 roundrobin x3, a token limit and a money budget (embedded: "
                 "SQLite)", "gw-rr-limits"),
        Scenario("rr-limits-redis", "8r the same limits on Redis (loopback)",
                 "gw-rr-limits-redis"),
        Scenario("rr-varied", "3v semproxy roundrobin x3, varied prompts", "gw-rr", "varied"),
        Scenario("cache-hit", "8a roundrobin x3 + response cache, 8 prompts (hits)",
                 "gw-rr-cache", "small"),
        Scenario("cache-miss", "8b roundrobin x3 + response cache, varied prompts (misses)",
                 "gw-rr-cache", "varied"),
        Scenario("cache-miss-exact", "8c same, exact layer only (APISIX default), varied "
                 "prompts (misses)", "gw-rr-cache-exact", "varied"),
        # The cache on the route it is made for: the semantic layer reuses the routing
        # vector, so a miss embeds nothing more than 4a does.
        Scenario("sem-cache-miss", "8d semantic local + response cache, varied prompts "
                 "(misses)", "gw-local-cache", "varied"),
    ]
    for s in scenarios:
        s.skip = targets[s.target].skip
        if args.only and s.key not in {*args.only, "relay"} and not s.skip:
            s.skip = "not selected (--only)"
    live = [s for s in scenarios if not s.skip]

    seed = [0]

    def next_seed() -> int:
        seed[0] += 1
        return seed[0] * 100_000_000

    print(f"warm-up {warm}s each", flush=True)
    for s in live:
        run_wrk(targets[s.target].url, 64, warm, s.prompts, next_seed(), args.threads,
                s.shape)

    stream_targets = {"direct": py_mock + chat}
    if not targets["gw-stream"].skip:
        stream_targets["gateway"] = targets["gw-stream"].url
    streams: dict[str, list[dict]] = {k: [] for k in stream_targets}
    for url in stream_targets.values():  # warm-up: one stream each
        asyncio.run(stream_batch(url, 1))

    for r in range(rounds):
        order = live[r % len(live):] + live[: r % len(live)]
        for s in order:
            t = targets[s.target]
            for conc in (1, 64):
                pids = tree(t.pgid_proc.pid) if t.pgid_proc else []
                cpu0 = cpu_seconds(pids)
                res = run_wrk(t.url, conc, duration, s.prompts, next_seed(), args.threads,
                              s.shape)
                res["cpu_s"] = cpu_seconds(tree(t.pgid_proc.pid)) - cpu0 if pids else 0.0
                res["round"] = r
                s.runs.setdefault(conc, []).append(res)
                print(f"round {r + 1}/{rounds} {s.key:10s} c={conc:<3d} "
                      f"rps={res['rps']:9.1f} p50={res['p50_us']:8.0f}us "
                      f"p99={res['p99_us']:8.0f}us errors={int(res['errors'])}", flush=True)
        for k in (list(stream_targets) if r % 2 == 0 else list(stream_targets)[::-1]):
            batch = asyncio.run(stream_batch(stream_targets[k], n_streams))
            streams[k].extend(batch)
            got = [len(b["delays_ns"]) for b in batch]
            print(f"round {r + 1}/{rounds} stream-{k}: chunks per stream {got}", flush=True)

    rss = {}
    for t in targets.values():
        if t.pgid_proc is not None and t.pgid_proc.poll() is None:
            rss[t.name] = peak_rss_mb(tree(t.pgid_proc.pid))
    return {"scenarios": scenarios, "targets": targets, "streams": streams, "rss": rss,
            "stream_skip": targets["gw-stream"].skip}


# The response cache's targets: (scenario, the one it is compared with, least ratio).
CACHE_TARGETS = (("cache-hit", "relay", 1.5), ("cache-miss", "rr-varied", 0.9),
                 ("cache-miss-exact", "rr-varied", 0.9), ("sem-cache-miss", "sem-miss", 0.9))


def cache_lines(by_key: dict, per_round: Callable[..., dict[int, float]]) -> list[str]:
    """The response cache's two targets: a hit >= 1.5x the relay's req/s, a miss >= 0.9x
    the same route without the cache (medians of per-round ratios, n rounds)."""
    out = []
    for key, ref_key, target in CACHE_TARGETS:
        s, ref = by_key.get(key), by_key.get(ref_key)
        if s is None or s.skip or ref is None or ref.skip:
            continue
        for conc in (64, 1):
            mine, base = per_round(s, conc, "rps"), per_round(ref, conc, "rps")
            found = [mine[k] / base[k] for k in mine if base.get(k)]
            if found:
                out.append(f"\n{s.label}: req/s c={conc} {fmt(median(found), 2)}x {ref.label} "
                           f"(median of {len(found)} per-round ratios, each "
                           f"{', '.join(fmt(v, 2) for v in found)}; target >= {target})")
    return out


def run_micro(quick: bool) -> str:
    """The two in-process benchmarks: a routing decision alone, and the cost of each part of
    semproxy's own request path (`request_costs.py`)."""
    parts = []
    for script, extra in (("routing_micro.py", ["--quick"] if quick else []),
                          ("request_costs.py", ["--iters", "300"] if quick else [])):
        argv = [PY, str(HERE / script), "--markdown", *extra]
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        print(f"{script} ...", flush=True)
        try:
            res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            parts.append(f"{script}: skipped (timed out).\n")
            continue
        if res.returncode != 0:
            parts.append(f"{script}: skipped ({res.stderr.strip()[-300:]}).\n")
            continue
        parts.append(res.stdout)
    return "\n\n".join(p.strip() for p in parts)


# Issue 25's targets for limits on the round-robin route, against the same route without.
LIMIT_TARGETS = {"rr-limits": 0.95, "rr-limits-redis": 0.85}
ADDED_P50_MS = 0.3


def limits_comparison(by_key: dict, per_round) -> list[str]:
    """req/s at c=64 and p50 at c=1 of the limited routes against plain round-robin, as
    medians of per-round ratios and differences (rounds alternate, so noise cancels)."""
    rr = by_key.get("rr")
    lines = []
    for key, target in LIMIT_TARGETS.items():
        s = by_key.get(key)
        if s is None or s.skip or rr is None or rr.skip:
            continue
        mine, ref = per_round(s, 64, "rps"), per_round(rr, 64, "rps")
        ratios = [mine[k] / ref[k] for k in mine if ref.get(k)]
        p50, p50_ref = per_round(s, 1, "p50_us"), per_round(rr, 1, "p50_us")
        added = [(p50[k] - p50_ref[k]) / 1000 for k in p50 if k in p50_ref]
        lines.append(f"\n{s.label}: req/s c=64 {fmt(median(ratios), 2)}x round-robin without "
                     f"limits (median of {len(ratios)} per-round ratios; target >= {target}); "
                     f"p50 at c=1 {fmt(median(added), 3)} ms added (median of {len(added)} "
                     f"per-round differences; target <= {ADDED_P50_MS} ms)")
    return lines


def write_report(path: Path, rep: dict, micro: str, command: str, started_at: str,
                 rounds: int, duration: float, n_streams: int, threads: int) -> None:
    scenarios: list[Scenario] = rep["scenarios"]
    by_key = {s.key: s for s in scenarios}
    relay = by_key["relay"]

    def per_round(s: Scenario, conc: int, metric: str) -> dict[int, float]:
        return {r["round"]: r[metric] for r in s.runs.get(conc, [])}

    def ratio(s: Scenario, conc: int, metric: str) -> float:
        mine, ref = per_round(s, conc, metric), per_round(relay, conc, metric)
        return median([mine[k] / ref[k] for k in mine if ref.get(k)])

    def cpu_us(s: Scenario) -> list[float]:
        return [r["cpu_s"] / r["requests"] * 1e6 for r in s.runs.get(64, []) if r["requests"]]

    lines = [
        "# semproxy benchmark results", "",
        f"Run {started_at}; {rounds} round(s) x {duration:g} s per wrk run, "
        f"wrk {threads} thread(s), scenarios alternating within each round.", "",
        "Command:", "", "```", command, "```", "", "Machine:", "", *machine(), "",
        "## Request path (non-streaming)", "",
        "Values are medians over rounds; `x relay` is the median of per-round ratios "
        "against the relay (noise cancels). Latencies in ms. CPU is utime+stime of the "
        "server's whole process tree over the c=64 run divided by its requests. Peak RSS "
        "is VmHWM at the end of the run, per process of the tree (largest shown; "
        "`n` processes).", "",
        "| scenario | req/s c=64 | x relay | p50 c=1 | p99 c=1 | p50 c=64 | p99 c=64 "
        "| p50 c=1 x relay | CPU us/req | CPU x relay | peak RSS MB | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in scenarios:
        if s.skip:
            lines.append(f"| {s.label} | {s.skip} |||||||||||")
            continue
        c1, c64 = s.runs.get(1, []), s.runs.get(64, [])
        cpu = median(cpu_us(s))
        cpu_ref = median(cpu_us(relay))
        rss = rep["rss"].get(s.target, [])
        rss_txt = f"{max(rss):.0f} (n={len(rss)})" if rss else "-"
        errs = int(sum(r["errors"] for r in c1 + c64))
        lines.append(
            f"| {s.label} | {fmt(median([r['rps'] for r in c64]))} "
            f"| {fmt(ratio(s, 64, 'rps'), 2)} "
            f"| {fmt(median([r['p50_us'] for r in c1]) / 1000, 2)} "
            f"| {fmt(median([r['p99_us'] for r in c1]) / 1000, 2)} "
            f"| {fmt(median([r['p50_us'] for r in c64]) / 1000, 2)} "
            f"| {fmt(median([r['p99_us'] for r in c64]) / 1000, 2)} "
            f"| {fmt(ratio(s, 1, 'p50_us'), 2)} | {fmt(cpu)} "
            f"| {fmt(cpu / cpu_ref if cpu_ref else float('nan'), 2)} | {rss_txt} | {errs} |")
    rr = by_key.get("rr")
    for key in ("rr-msg", "rr-resp"):
        s = by_key.get(key)
        if s is None or s.skip or rr is None or rr.skip:
            continue
        mine, ref = per_round(s, 64, "rps"), per_round(rr, 64, "rps")
        ratios = [mine[k] / ref[k] for k in mine if ref.get(k)]
        lines.append(f"\n{s.label}: req/s c=64 {fmt(median(ratios), 2)}x Chat Completions "
                     f"on the same route (median of {len(ratios)} per-round ratios; "
                     f"target >= 0.85)")
    lines += limits_comparison(by_key, per_round)
    lines += cache_lines(by_key, per_round)
    direct = by_key["direct"]
    floor = median([r["rps"] for r in direct.runs.get(64, [])])
    others = [median([r["rps"] for r in s.runs.get(64, [])]) for s in scenarios
              if s.key != "direct" and not s.skip]
    fastest = max(others) if others else float("nan")
    # Measured req/s of the floor is capped by wrk and by sharing the CPUs with
    # it; the mock's own CPU per request gives its capacity on one core.
    mock_cpu = median(cpu_us(direct))
    capacity = 1e6 / mock_cpu if mock_cpu else float("nan")
    ok = floor >= 10 * fastest or capacity >= 10 * fastest
    lines += ["", f"Mock floor check: nginx served {fmt(floor)} req/s, "
              f"{fmt(floor / fastest, 1)}x the fastest server measured through it "
              f"({fmt(fastest)} req/s); at {fmt(mock_cpu, 1)} us CPU per request one nginx "
              f"worker could serve {fmt(capacity)} req/s per core "
              f"({fmt(capacity / fastest, 1)}x): "
              + ("OK (>= 10x, the mock is not the bottleneck)." if ok else
                 "**WARNING: below 10x, the mock may limit the results.**"), ""]

    notes = [f"- {t.name}: {t.note}" for t in rep["targets"].values() if t.note]
    if notes:
        lines += ["Routing seen by the probe request (prompt \"write a python function "
                  "that reverses a linked list\"):", "", *notes, ""]
    bad = [s.label for s in scenarios if not s.skip and any(
        r["errors"] > 0.01 * max(1, r["requests"]) for c in s.runs.values() for r in c)]
    if bad:
        lines += [f"**WARNING: more than 1% errors (non-2xx or socket) in: {', '.join(bad)}; "
                  "see the logs in the work dir.**", ""]
    lines += ["## Streaming (200 chunks, one every 5 ms)", ""]
    streams = rep["streams"]
    lines += [f"{n_streams} stream(s) per target per round, sequential. Delay per chunk = "
              "arrival at the client minus the moment the mock wrote it (both "
              "CLOCK_MONOTONIC). `added` = gateway minus direct.", "",
              "| path | streams ok | chunks | TTFB p50 ms | TTFB p99 ms "
              "| chunk delay p50 ms | chunk delay p99 ms |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    summary = {}
    for k, batch in streams.items():
        ok_b = [b for b in batch if b["status"] == 200 and b["delays_ns"]]
        delays = [d / 1e6 for b in ok_b for d in b["delays_ns"]]
        ttfb = [b["ttfb_ns"] / 1e6 for b in ok_b if b["ttfb_ns"] is not None]
        summary[k] = (pct(ttfb, 50), pct(ttfb, 99), pct(delays, 50), pct(delays, 99))
        lines.append(f"| {k} | {len(ok_b)}/{len(batch)} | {len(delays)} "
                     f"| {fmt(summary[k][0], 2)} | {fmt(summary[k][1], 2)} "
                     f"| {fmt(summary[k][2], 3)} | {fmt(summary[k][3], 3)} |")
    if "gateway" in summary:
        d, g = summary["direct"], summary["gateway"]
        lines.append(f"| added by gateway (p99 of few samples is noisy) | | "
                     f"| {fmt(g[0] - d[0], 2)} | {fmt(g[1] - d[1], 2)} "
                     f"| {fmt(g[2] - d[2], 3)} | {fmt(g[3] - d[3], 3)} |")
    else:
        lines.append(f"| gateway | {rep['stream_skip']} ||||||")
    lines += ["", "## Routing decision alone, and semproxy's own code per request", "",
              micro.strip(), ""]
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
