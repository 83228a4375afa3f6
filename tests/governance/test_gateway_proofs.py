"""The proofs through real gateway processes: two `semproxy serve` processes and one with
`--workers 2` (four workers, three ports) against one real redis-server.

- 1,000 concurrent requests, whole and streamed, in all three protocols, against a
  money budget: the committed spend stays within the budget plus one request's
  reservation, and equals what the answers reported.
- A tokens-per-window limit admits within 1% of its limit in every window, across the
  window edges (windows of 4 s stand in for minutes: the same code, faster).
- redis-server stopped and restarted mid-run: no gateway crashes, `on_store_error` is
  honoured (allow serves, deny answers 503), and the counts are right afterwards.
- A SQLite money budget survives a gateway restart (tests/governance/test_sqlite_restart.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.fakes.redis_server import RedisServer
from tests.governance.gateways import PROTOCOLS, Served, ask, start_all, write_config

from semproxy.config.loader import load_data
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.lease import KEEP_S
from semproxy.governance.pricing import from_money
from semproxy.governance.tokens import input_bound

PRICE_IN, PRICE_OUT = 2000, 8000  # nanos per token: 2 and 8 per million
BUDGET = 0.05
WINDOW = 4  # seconds
TPM = 100_000  # tokens per window
KEY = "proof-key-0123"


def cluster_doc(tmp: Path, redis_port: int) -> dict[str, Any]:
    redis = {"policy": "redis", "redis_host": "127.0.0.1", "redis_port": redis_port}
    instances = [{"name": "e", "provider": "echo", "weight": 1, "options": {"model": "e"},
                  "pricing": {"input": 2.0, "output": 8.0}}]

    def route(rid: str, **limiting: Any) -> dict[str, Any]:
        return {"id": rid, "uri": f"/{rid}/*", "plugins": {
            "key-auth": {}, "ai-proxy-multi": {"instances": instances},
            "ai-rate-limiting": {**redis, **limiting}}}

    hourly = [{"requests": 10**6, "window": "hour"}]
    return {
        "listen": "127.0.0.1:0",
        "governance": {"sqlite_path": str(tmp / "spend.db"), "ledger": "redis",
                       "redis": {"host": "127.0.0.1", "port": redis_port}},
        "consumers": [{"username": "proof", "plugins": {"key-auth": {"key": KEY}}}],
        "routes": [route("budget", limits=[{"money": BUDGET, "window": "month"}]),
                   route("tpm", limits=[{"total_tokens": TPM, "window": WINDOW}]),
                   route("allow", limits=hourly, on_store_error="allow"),
                   route("deny", limits=hourly, on_store_error="deny")],
    }


@pytest.fixture(scope="module")
def cluster(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[dict[str, Any], list[Served]]]:
    if not redis_server.is_answering():
        redis_server.start()
    redis_server.flush()
    tmp = tmp_path_factory.mktemp("cluster")
    doc = cluster_doc(tmp, redis_server.port)
    path = write_config(tmp / "gateway.json", doc)
    gateways = [Served(path), Served(path), Served(path, workers=2)]
    try:
        start_all(gateways)
        yield doc, gateways
    finally:
        codes = [gw.stop() for gw in gateways]
        assert codes == [0, 0, 0]


async def counter(doc: dict[str, Any], route: str, slot: str) -> int:
    """A route's limit counter in one window (`slot`), read from Redis."""
    plan = load_data(doc).governance
    assert plan is not None
    limit = plan.routes[route].admit[0]
    stores = StoreSet.for_plan(plan)
    try:
        return await stores.store(limit.store).used([f"{limit.id}|{route}|{slot}"],
                                                     time.time())
    finally:
        await stores.close()


def hold(text: str, max_tokens: int) -> int:
    """What one request reserves against the budget, at the route's (only) price."""
    bound = input_bound({"messages": [{"role": "user", "content": text}]}).tokens
    return bound * PRICE_IN + max_tokens * PRICE_OUT


async def test_a_money_budget_holds_against_1000_concurrent_requests_on_four_workers(
        cluster: tuple[dict[str, Any], list[Served]]) -> None:
    doc, gateways = cluster
    rng = random.Random(7)
    jobs = []
    for i in range(1000):
        words = rng.randint(5, 40)
        text = " ".join(f"w{i}x{j}" for j in range(words))
        jobs.append((gateways[i % 3].url + "/budget", rng.choice(PROTOCOLS), text,
                     rng.randint(words + 5, 80), rng.random() < 0.5))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        # All at once: every hold is in flight together (unlimited budget: ~0.1 spent).
        results = list(await asyncio.gather(*(ask(http, *job) for job in jobs)))
        assert {status for status, _ in results} == {200, 429}

        async def drain(n: int) -> None:
            """Then keep asking until refused three times: the budget gets used up."""
            refused = 0
            while refused < 3:
                result = await ask(http, *jobs[n])
                results.append(result)
                refused += result[0] != 200
        await asyncio.gather(*(drain(n) for n in range(24)))
        # A worker refuses once its lease has no room, while another may still hold a
        # surplus (governance/lease.py): idle, they give it back, and asking again uses it.
        await asyncio.sleep(KEEP_S + 1)
        await asyncio.gather(*(drain(n) for n in range(24)))
    reported = sum(given * PRICE_IN + made * PRICE_OUT for _, (given, made) in results)
    month = f"m{time.strftime('%Y%m', time.gmtime())}"
    for _ in range(100):  # idle workers give their leases' surplus back within ~2 s
        spent = await counter(doc, "budget", month)
        if spent == reported:
            break
        await asyncio.sleep(0.1)
    one_reservation = max(hold(text, max_tokens) for _, _, text, max_tokens, _ in jobs)
    assert spent == reported  # every answer committed what it reported, no more
    assert spent <= from_money(BUDGET) + one_reservation
    assert spent >= from_money(BUDGET) - 8 * one_reservation  # and it was used up


async def test_a_tokens_per_window_limit_admits_within_one_percent_across_edges(
        cluster: tuple[dict[str, Any], list[Served]]) -> None:
    doc, gateways = cluster
    # One-letter words: echo counts words, the bound counts bytes, so a hold (the bound
    # 227 + max_tokens 105) is close to what an answer uses (100 + 102) and 0.33% of the
    # limit: when less than a hold is left, the window is within 1% of full.
    text = " ".join(["x"] * 100)
    await asyncio.sleep(WINDOW - time.time() % WINDOW + 0.05)  # start at a window's start
    first = int(time.time() // WINDOW)
    stop_at = (first + 3) * WINDOW  # three whole windows
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        async def client(n: int) -> None:
            while time.time() < stop_at:
                status, _ = await ask(http, gateways[n % 3].url + "/tpm",
                                      "chat/completions", text, 105, False)
                if status != 200:
                    await asyncio.sleep(0.01)
        await asyncio.gather(*(client(n) for n in range(48)))
    await asyncio.sleep(1)  # the gateways report their last use (sync_interval 0.25 s)
    used = [await counter(doc, "tpm", str(slot)) for slot in range(first, first + 3)]
    for tokens in used:
        assert 0.99 * TPM <= tokens <= TPM, used


async def test_redis_stopped_and_restarted_mid_run(
        cluster: tuple[dict[str, Any], list[Served]], redis_server: RedisServer) -> None:
    doc, gateways = cluster
    hour = str(int(time.time() // 3600))
    before = {r: await counter(doc, r, hour) for r in ("allow", "deny")}
    outcomes: dict[str, list[tuple[float, int]]] = {"allow": [], "deny": []}
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        async def client(n: int, route: str) -> None:
            while time.monotonic() - started < 5:
                status, _ = await ask(http, gateways[n % 3].url + f"/{route}", PROTOCOLS[n % 3],
                                      "short question", 20, n % 2 == 1)
                outcomes[route].append((time.monotonic() - started, status))
                await asyncio.sleep(0.01)

        async def outage() -> None:
            await asyncio.sleep(1.0)
            await asyncio.to_thread(redis_server.stop)
            await asyncio.sleep(2.0)
            await asyncio.to_thread(redis_server.start)

        await asyncio.gather(outage(), *(client(n, r) for n in range(12)
                                         for r in ("allow", "deny")))
    assert all(gw.is_alive() for gw in gateways)
    assert {s for _, s in outcomes["allow"]} == {200}  # allow: served through the outage
    deny = {s for _, s in outcomes["deny"]}
    assert deny == {200, 503}  # deny: refused while the store was away, served after
    assert all(s == 200 for t, s in outcomes["deny"] if t > 4.5)
    served = {r: sum(s == 200 for _, s in outcomes[r]) for r in outcomes}
    # Every request served is counted once, those served unheld during the outage too.
    for _ in range(60):
        now = {r: await counter(doc, r, hour) - before[r] for r in served}
        if now == served:
            break
        await asyncio.sleep(0.1)
    assert now == served
