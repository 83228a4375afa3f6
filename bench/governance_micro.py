"""Cost of one reserve + commit pair per store (the admit and account phases' share).

    .venv/bin/python bench/governance_micro.py [--n 3000]

Each store is measured with the limits it would hold on a route: in-process (a
tokens-per-minute limit), SQLite (a monthly money budget and the ledger row),
Redis on loopback (both limits and the ledger). Sequential pairs (c=1), so the
figure is the latency a request gains; prints median, p95 and a 95% interval
of the median (order statistics), plus CPU time per pair.
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


def doc(limiting: dict[str, Any], sqlite: str) -> dict[str, Any]:
    pricing = {"input": 2.0, "output": 8.0}
    inst = {"name": "a", "provider": "echo", "weight": 1, "pricing": pricing}
    return {"governance": {"sqlite_path": sqlite}, "routes": [{"id": "r", "uri": "/v1/*", "plugins": {
        "ai-proxy-multi": {"instances": [inst]}, "ai-rate-limiting": limiting}}]}


async def measure(document: dict[str, Any], n: int) -> tuple[list[float], float]:
    plan = load_data(document).governance
    assert plan is not None
    gov = Governor(plan, StoreSet.for_plan(plan))
    usage = Usage(100, 50)
    for _ in range(200):  # warm up: connections, scripts, tables
        await gov.commit(await gov.reserve(RequestFacts("r", input_tokens=100, max_tokens=100)),
                         usage, "a")
    times = []
    cpu = time.process_time()
    for _ in range(n):
        start = time.perf_counter()
        res = await gov.reserve(RequestFacts("r", input_tokens=100, max_tokens=100))
        await gov.commit(res, usage, "a")
        times.append((time.perf_counter() - start) * 1e6)
    cpu_us = (time.process_time() - cpu) / n * 1e6
    await gov.stores.close()
    return sorted(times), cpu_us


def report(name: str, times: list[float], cpu_us: float) -> None:
    n = len(times)
    lo, hi = times[int(n / 2 - 1.96 * n**0.5 / 2)], times[int(n / 2 + 1.96 * n**0.5 / 2)]
    print(f"{name:10} n={n} median {statistics.median(times):7.1f} us [{lo:.1f}, {hi:.1f}] "
          f"p95 {times[int(n * 0.95)]:7.1f} us  cpu {cpu_us:6.1f} us/pair")


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--n", type=int, default=3000)
    n = args.parse_args().n
    tpm = {"total_tokens": 10**12, "window": "minute"}
    money = {"money": 10**6, "window": "month"}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "spend.db")
        cases = [("in-process", doc({"limits": [tpm]}, db) | {"governance": {"ledger": "none"}}),
                 ("sqlite", doc({"limits": [money]}, db))]
        server = RedisServer(Path(tmp))
        server.start()
        redis = {"policy": "redis", "redis_host": "127.0.0.1", "redis_port": server.port}
        cases.append(("redis", doc({**redis, "limits": [tpm, money]}, db)
                      | {"governance": {"ledger": "redis", "redis": {"port": server.port}}}))
        try:
            for name, document in cases:
                report(name, *asyncio.run(measure(document, n)))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
