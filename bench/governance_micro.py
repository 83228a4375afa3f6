"""Cost of one reserve + commit pair per store (the admit and account phases' share).

    .venv/bin/python bench/governance_micro.py [--n 3000] [--repeat 3] [--case embedded]

`--before` runs the same cases on the code before leases (check it out elsewhere
and put its src first on PYTHONPATH): it has no `local_counters` setting (its
local limits were per process anyway) and nothing deferred to flush.

Each case is a route as a user would configure it, against the same route
without limits (the `none` row: the governor finds nothing to hold):
- in-process: a tokens-per-minute limit counted in this process
  (`local_counters: process`), no ledger;
- embedded: the default setup, a tokens-per-minute limit (`policy: local`, per
  host, in the SQLite file) and a monthly money budget and the spend ledger in
  SQLite;
- redis: both limits and the ledger on a redis-server on loopback.
Sequential pairs (c=1), each followed by one event-loop turn (as a request's
own awaits give the loop), so background lease syncs run as they would in the
gateway. Prints the median wall time with a 95% interval (order statistics),
p95, and CPU time per pair (process time, the SQLite thread included, and the
final flush of every store's unreported use and ledger entries, so deferred
work is counted), per repeat; `added` is the median minus the `none` row's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from semproxy.config.loader import load_data
from semproxy.governance.governor import Governor, RequestFacts
from semproxy.governance.governor_stores import StoreSet
from semproxy.types import Usage
from tests.fakes.redis_server import RedisServer


def doc(limiting: dict[str, Any] | None, governance: dict[str, Any]) -> dict[str, Any]:
    pricing = {"input": 2.0, "output": 8.0}
    inst = {"name": "a", "provider": "echo", "weight": 1, "pricing": pricing}
    plugins: dict[str, Any] = {"ai-proxy-multi": {"instances": [inst]}}
    if limiting is not None:
        plugins["ai-rate-limiting"] = limiting
    return {"governance": governance,
            "routes": [{"id": "r", "uri": "/v1/*", "plugins": plugins}]}


async def flush(gov: Governor, before: bool) -> None:
    for syncer in [] if before else gov.stores.syncers():
        await syncer.flush()


async def measure(document: dict[str, Any], n: int, before: bool
                  ) -> tuple[list[float], float]:
    plan = load_data(document).governance
    assert plan is not None
    gov = Governor(plan, StoreSet.for_plan(plan))
    usage = Usage(100, 50)
    facts = RequestFacts("r", input_tokens=100, max_tokens=100)
    for _ in range(500):  # warm up: connections, scripts, tables, leases
        await gov.commit(await gov.reserve(facts), usage, "a")
        await asyncio.sleep(0)
    await flush(gov, before)
    times = []
    cpu = time.process_time()
    for _ in range(n):
        start = time.perf_counter()
        res = await gov.reserve(facts)
        await gov.commit(res, usage, "a")
        await asyncio.sleep(0)
        times.append((time.perf_counter() - start) * 1e6)
    await flush(gov, before)  # the deferred work (reports, ledger rows) counts
    cpu_us = (time.process_time() - cpu) / n * 1e6
    assert res.refusal is None
    await gov.stores.close()
    return sorted(times), cpu_us


def report(name: str, times: list[float], cpu_us: float, base: float) -> None:
    n = len(times)
    lo, hi = times[int(n / 2 - 1.96 * n**0.5 / 2)], times[int(n / 2 + 1.96 * n**0.5 / 2)]
    median = statistics.median(times)
    print(f"{name:10} n={n} median {median:7.1f} us [{lo:.1f}, {hi:.1f}] "
          f"p95 {times[int(n * 0.95)]:7.1f} us  cpu {cpu_us:6.1f} us/pair  "
          f"added {median - base:6.1f} us")


def cases(tmp: str, redis_port: int, before: bool = False
          ) -> list[tuple[str, dict[str, Any]]]:
    tpm = {"total_tokens": 10**12, "window": "minute"}
    money = {"money": 10**6, "window": "month"}
    sqlite = {"sqlite_path": str(Path(tmp) / "spend.db")}
    redis = {"policy": "redis", "redis_host": "127.0.0.1", "redis_port": redis_port}
    process = {} if before else {"local_counters": "process"}
    return [("none", doc(None, sqlite)),
            ("in-process", doc({"limits": [tpm]}, {**sqlite, "ledger": "none", **process})),
            ("embedded", doc({"limits": [tpm, money]}, sqlite)),
            ("redis", doc({**redis, "limits": [tpm, money]},
                          {**sqlite, "ledger": "redis", "redis": {"port": redis_port}}))]


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--n", type=int, default=3000)
    args.add_argument("--repeat", type=int, default=1)
    args.add_argument("--case", action="append", help="only these cases (repeatable)")
    args.add_argument("--before", action="store_true")
    parsed = args.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            for _ in range(parsed.repeat):
                base = 0.0
                for name, document in cases(tmp, server.port, parsed.before):
                    if parsed.case and name not in parsed.case:
                        continue
                    times, cpu_us = asyncio.run(measure(document, parsed.n, parsed.before))
                    base = statistics.median(times) if name == "none" else base
                    report(name, times, cpu_us, base)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
