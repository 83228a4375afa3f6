"""`semproxy spend` reads the ledger and counters that the Governor API wrote, in SQLite
and in Redis: the numbers it prints are the ones committed, per UTC period."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from tests.fakes.redis_server import RedisServer
from tests.governance.plans import Clock, document, governor

from semproxy.governance.governor import RequestFacts
from semproxy.governance.periods import DAY, HOUR
from semproxy.governance.spend import allowances, series, spend
from semproxy.types import Usage

ROOT = Path(__file__).resolve().parents[2]
# small: 2.0 input, 8.0 output, 0.5 cached input per million tokens (plans.document)
COST = (600 * 2.0 + 400 * 0.5 + 500 * 8.0) / 1e6  # one answer of Usage(1000, 500, 400)


def config(tmp_path: Path, redis: RedisServer | None) -> dict[str, Any]:
    store = {"policy": "redis", "redis_host": "127.0.0.1", "redis_port": redis.port} \
        if redis else {}
    groups = [{"id": "team", "plugins": {"ai-rate-limiting": {
        **store, "limits": [{"name": "team-monthly", "money": 50, "window": "month"}]}}}]
    consumers = [{"username": u, "plugins": {"key-auth": {"key": f"{u}-key-0123"}},
                  **({"group_id": "team"} if u == "alice" else {})} for u in ("alice", "bob")]
    limiting = {**store, "limits": [
        {"name": "per-key-daily", "scope": "consumer", "total_tokens": 100_000, "window": "day"}]}
    ledger = {"ledger": "redis", "redis": {"port": redis.port}} if redis else {}
    return document(limiting, consumers=consumers, groups=groups, governance={
        "sqlite_path": str(tmp_path / "spend.db"), **ledger})


async def answer(doc: dict[str, Any], moments: list[tuple[str, float]]) -> None:
    """One answered request of Usage(1000, 500, 400) per (consumer, moment)."""
    clock = Clock()
    gov = governor(doc, clock)
    for consumer, moment in moments:
        clock.now = moment
        res = await gov.reserve(RequestFacts("r", consumer=consumer, input_tokens=1000,
                                             max_tokens=1000))
        assert res.refusal is None
        await gov.commit(res, Usage(1000, 500, cached_input=400), "small")
    await gov.stores.close()  # a clean shutdown writes the ledger rows


def cli(path: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "semproxy", "spend", str(path), "--json", *args],
                          capture_output=True, text=True, timeout=30, check=False,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = orjson.loads(done.stdout)
    return found


def months_ago(then: float, now: float) -> int:
    a, b = datetime.fromtimestamp(then, UTC), datetime.fromtimestamp(now, UTC)
    return (b.year - a.year) * 12 + b.month - a.month


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest) -> RedisServer | None:
    if request.param == "sqlite":
        return None
    server: RedisServer = request.getfixturevalue("redis")
    return server


async def test_the_command_prints_what_the_governor_committed(
        tmp_path: Path, store: RedisServer | None) -> None:
    doc = config(tmp_path, store)
    now = time.time()
    earlier = now - 40 * DAY
    await answer(doc, [("alice", earlier), ("bob", now - 3 * HOUR), ("alice", now),
                       ("alice", now)])
    path = tmp_path / "semproxy.yaml"
    path.write_text(yaml.safe_dump(doc))

    ago = int(time.time() // HOUR - (now - 3 * HOUR) // HOUR)  # 3, unless an hour began
    found = await asyncio.to_thread(cli, path, "--period", "hour", "--ago", str(ago))
    assert [(r["key"], r["requests"]) for r in found["rows"]] == [("bob", 1)]
    assert found["rows"][0]["cost"] == pytest.approx(COST)
    old = await asyncio.to_thread(cli, path, "--period", "month", "--ago",
                                  str(months_ago(earlier, time.time())), "--by", "group")
    assert [(r["key"], r["requests"]) for r in old["rows"]] == [("team", 1)]
    everything = await asyncio.to_thread(cli, path, "--period", "all", "--by", "route")
    assert everything["total"]["requests"] == 4
    assert everything["total"]["output_tokens"] == 2000
    assert everything["total"]["cost"] == pytest.approx(4 * COST)

    today = await asyncio.to_thread(cli, path, "--period", "day", "--consumer", "alice")
    limits = {a["limit"]: a for a in today["allowances"]}
    daily = limits["per-key-daily"]  # a route's limit per consumer: read for alice
    assert (daily["owner"], daily["route"], daily["used"]) == ("alice", "r", 3000)
    assert daily["remaining"] == 97_000
    monthly = limits["team-monthly"]
    assert monthly["owner"] == "team" and monthly["used"] == pytest.approx(2 * COST)
    assert monthly["resets_at"].endswith("T00:00:00Z")


async def test_minutes_are_read_from_the_finest_hashes(tmp_path: Path,
                                                       store: RedisServer | None) -> None:
    doc = config(tmp_path, store)
    start = 1_800_000_000.0  # 2027-01-15 08:00 UTC
    await answer(doc, [("alice", start + 30), ("bob", start + 90), ("bob", start + 95),
                       ("alice", start + 4000)])
    gov = governor(doc, Clock(start + 100))
    try:
        minute = await spend(gov, "consumer", "minute")
        assert [(r.key, r.requests) for r in minute] == [("bob", 2)]
        hour = await spend(gov, "consumer", "hour")
        assert sorted((r.key, r.requests) for r in hour) == [("alice", 1), ("bob", 2)]
        points = await series(gov, "consumer", "minute", 3)
        assert [sum(r.requests for r in b.rows) for b in points] == [0, 1, 2]
        gov.clock = Clock(start + 4000)
        assert [r.requests for r in await spend(gov, "consumer", "hour")] == [1]
        assert [r.requests for r in await spend(gov, "consumer", "hour", 1)] == [2, 1]
    finally:
        await gov.stores.close()


async def test_an_allowance_names_every_limit_that_applies(tmp_path: Path) -> None:
    doc = config(tmp_path, None)
    gov = governor(doc, Clock())
    try:
        alice = {(a.limit.label, a.owner, a.route) for a in await allowances(gov, "alice")}
        bob = {(a.limit.label, a.owner, a.route) for a in await allowances(gov, "bob")}
    finally:
        await gov.stores.close()
    assert alice == {("team-monthly", "team", None), ("per-key-daily", "alice", "r")}
    assert bob == {("per-key-daily", "bob", "r")}
