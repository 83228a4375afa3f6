"""Run semproxy as several replicas on this host: etcd, redis-server and N gateways.

    python scripts/cluster.py --config examples/cluster.yaml --replicas 2

The layout of a cluster on one machine, on loopback: one etcd holds the config
(pushed from --config with `semproxy config push`), one redis-server holds the
limits' counters, the budgets and the spend ledger, and each replica is a
`semproxy serve --etcd` process of its own, with its own port and admin port.
Redis is started on the port the config names (its `redis_port` and
`governance.redis.port` must agree and be on 127.0.0.1). The script waits until
every replica answers /healthz, prints where everything is, and runs until
Ctrl-C or SIGTERM; then it stops the replicas (they drain), Redis (it saves)
and etcd, and exits 0 when every replica exited cleanly. Data (etcd's, Redis's,
the replicas' logs) stays in --dir between runs.

Needs `etcd` and `redis-server` on PATH (Debian: etcd-server, redis-server) and
semproxy importable by this Python. Replicas read `SEMPROXY_ADMIN_LISTEN`, so a
config whose `admin.listen` is `${SEMPROXY_ADMIN_LISTEN:-...}` gets one admin
port per replica (--admin-port, then the next ones); port 0 picks free ports.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

READY_S = 60.0  # a replica loads the embedding model and warms its routes
STOP_S = 30.0


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    info: dict[str, Any] = field(default_factory=dict)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_port(config: dict[str, Any]) -> int | None:
    """The one Redis the config names (limits with policy redis, the Redis ledger)."""
    found: set[tuple[str, int]] = set()
    gov = config.get("governance") or {}
    if gov.get("ledger") == "redis":
        r = gov.get("redis") or {}
        found.add((r.get("host", "127.0.0.1"), r.get("port", 6379)))
    owners = [*(config.get("routes") or []), *(config.get("consumers") or []),
              *(config.get("consumer_groups") or [])]
    for owner in owners:
        plugin = (owner.get("plugins") or {}).get("ai-rate-limiting") or {}
        if plugin.get("policy") == "redis":
            found.add((plugin.get("redis_host", ""), plugin.get("redis_port", 6379)))
    if len(found) > 1 or any(host not in ("127.0.0.1", "localhost") for host, _ in found):
        raise SystemExit(f"cluster.py starts one Redis on 127.0.0.1; the config names {found}")
    return next(iter(found))[1] if found else None


def answers(url: str, body: bytes | None = None) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def wait_for(what: str, check: Any, proc: Proc, within: float) -> None:
    deadline = time.monotonic() + within
    while not check():
        if proc.popen.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.popen.returncode}; see {proc.log}")
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not come up within {within:.0f} s; see {proc.log}")
        time.sleep(0.05)


def spawn(name: str, argv: list[str], data: Path, env: dict[str, str] | None = None) -> Proc:
    log = data / f"{name}.log"
    out = log.open("ab")
    popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)  # signals come from this script only
    out.close()
    return Proc(name, popen, log)


def start_etcd(data: Path, port: int) -> Proc:
    client, peer = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{free_port()}"
    proc = spawn("etcd", ["etcd", "--name", "semproxy", "--data-dir", str(data / "etcd"),
                          "--listen-client-urls", client, "--advertise-client-urls", client,
                          "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                          "--initial-cluster", f"semproxy={peer}", "--log-level", "error"], data)
    wait_for("etcd", lambda: answers(f"{client}/v3/kv/range", b'{"key":"AA=="}'), proc, 20)
    proc.info = {"url": client}
    return proc


def start_redis(data: Path, port: int) -> Proc:
    (data / "redis").mkdir(exist_ok=True)
    # appendonly: a budget's counters survive a Redis restart to the last second
    proc = spawn("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(port),
                           "--dir", str(data / "redis"), "--appendonly", "yes",
                           "--save", "60 1", "--loglevel", "warning"], data)
    wait_for("redis-server", lambda: redis_answers(port), proc, 20)
    proc.info = {"address": f"127.0.0.1:{port}"}
    return proc


def semproxy(*args: str) -> list[str]:
    return [sys.executable, "-m", "semproxy", *args]


def start_replica(i: int, etcd: str, prefix: str, port: int, admin_port: int, data: Path
                  ) -> Proc:
    env = {**os.environ, "SEMPROXY_ADMIN_LISTEN": f"127.0.0.1:{admin_port}"}
    return spawn(f"replica-{i}", semproxy("serve", "--etcd", etcd, "--prefix", prefix,
                                          "--listen", f"127.0.0.1:{port}"), data, env)


def announced(proc: Proc) -> dict[str, Any]:
    """The URLs a replica printed when it listened (`semproxy listening on ...`)."""
    found: dict[str, Any] = {"pid": proc.popen.pid, "log": str(proc.log)}
    for line in proc.log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("semproxy listening on "):
            found["url"] = line.split(" on ")[1].split()[0]
        elif line.startswith("semproxy admin on "):
            found["admin"] = line.split(" on ")[1].split()[0]
    return found


def stop(procs: list[Proc]) -> int:
    """SIGTERM each (replicas first, as listed), wait, kill what is left; the worst code."""
    worst = 0
    for proc in procs:
        if proc.popen.poll() is None:
            proc.popen.send_signal(signal.SIGTERM)
        try:
            code = proc.popen.wait(STOP_S)
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            code = proc.popen.wait()
            print(f"{proc.name} did not stop in {STOP_S:.0f} s: killed", file=sys.stderr)
        if proc.name.startswith("replica") and code != 0:
            worst = max(worst, 1)
            print(f"{proc.name} exited with {code}; see {proc.log}", file=sys.stderr)
    return worst


def up(args: argparse.Namespace, stopping: list[bool]) -> int:
    for tool in ("etcd", "redis-server"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not on PATH (Debian: apt-get install etcd-server "
                             "redis-server)")
    config = yaml.safe_load(Path(args.config).read_text(encoding="utf-8")) or {}
    port = redis_port(config)  # refused before anything starts
    data = Path(args.dir)
    data.mkdir(parents=True, exist_ok=True)
    procs: list[Proc] = []  # in stop order: replicas, then redis, then etcd
    try:
        etcd = start_etcd(data, args.etcd_port or free_port())
        procs.insert(0, etcd)
        if port is not None:
            procs.insert(0, start_redis(data, port))
        pushed = subprocess.run(semproxy("config", "push", args.config, "--etcd",
                                         etcd.info["url"], "--prefix", args.prefix),
                                capture_output=True, text=True, check=False)
        if pushed.returncode != 0:
            raise SystemExit(f"semproxy config push failed:\n{pushed.stderr.strip()}")
        replicas = [start_replica(i + 1, etcd.info["url"], args.prefix,
                                  args.port + i if args.port else 0,
                                  args.admin_port + i if args.admin_port else 0, data)
                    for i in range(args.replicas)]
        procs[:0] = replicas
        for r in replicas:
            wait_for(r.name, lambda r=r: "url" in announced(r) and answers(
                announced(r)["url"] + "/healthz"), r, READY_S)
        report(args, etcd, port, replicas, procs[len(replicas):])
        while not stopping and all(p.popen.poll() is None for p in procs):
            time.sleep(0.2)
        if not stopping:
            died = next(p for p in procs if p.popen.poll() is not None)
            print(f"{died.name} exited with {died.popen.returncode}; stopping the cluster "
                  f"(see {died.log})", file=sys.stderr)
            stop(procs)
            return 1
    except BaseException:
        stop(procs)
        raise
    return stop(procs)


def report(args: argparse.Namespace, etcd: Proc, redis: int | None, replicas: list[Proc],
           helpers: list[Proc]) -> None:
    found = {"etcd": etcd.info["url"], "prefix": args.prefix,
             "redis": f"127.0.0.1:{redis}" if redis else None,
             "replicas": [announced(r) for r in replicas], "pid": os.getpid(),
             "pids": [p.popen.pid for p in [*replicas, *helpers]]}
    if args.json:
        print(json.dumps(found), flush=True)
        return
    print(f"semproxy cluster up: etcd {found['etcd']} (prefix {args.prefix}), "
          f"redis {found['redis'] or '(none)'}")
    for i, r in enumerate(found["replicas"], 1):
        print(f"  replica {i}: {r['url']}  admin {r.get('admin', '(none)')}  "
              f"(pid {r['pid']}, log {r['log']})")
    print("Ctrl-C or SIGTERM stops everything.", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="config file to push to etcd")
    p.add_argument("--replicas", type=int, default=2, help="gateway processes (default 2)")
    p.add_argument("--dir", default=".cluster", help="data and logs (default .cluster)")
    p.add_argument("--prefix", default="/semproxy", help="etcd key prefix (default /semproxy)")
    p.add_argument("--etcd-port", type=int, default=2379, help="0: a free port (default 2379)")
    p.add_argument("--port", type=int, default=9081,
                   help="the first replica's port, the next ones follow; 0: free ports")
    p.add_argument("--admin-port", type=int, default=9181,
                   help="the first replica's admin port (SEMPROXY_ADMIN_LISTEN); 0: free")
    p.add_argument("--json", action="store_true", help="print one JSON line when ready")
    args = p.parse_args(argv)
    stopping: list[bool] = []

    def on_signal(signum: int, frame: object) -> None:
        stopping.append(True)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return up(args, stopping)


if __name__ == "__main__":
    sys.exit(main())
