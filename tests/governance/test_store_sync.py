"""Lease syncs and exclusive markers behave the same in every store, real Redis included."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fakes.redis_server import RedisServer
from tests.governance.stores import KINDS, open_store
from tests.governance.test_store_contract import hold

from semproxy.governance.lease import LeaseAsk
from semproxy.governance.model import Hold, Settle
from semproxy.governance.store import SpendEntry


def ask(spent: int, want: int, seq: int, need: int = 0, limit: int = 100, keep: bool = True,
        counter: str = "a") -> LeaseAsk:
    return LeaseAsk(counter, (counter,), limit, 3600, keep, seq, spent, want, need)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(kind: str, request: pytest.FixtureRequest) -> RedisServer | None:
    return request.getfixturevalue("redis") if kind == "redis" else None


async def test_two_workers_leases_never_pass_the_limit(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        [a] = await store.sync("w1", [ask(0, 70, 1)], [], 60, 0.0)
        [b] = await store.sync("w2", [ask(0, 70, 1)], [], 60, 0.0)
        assert (a.hold, a.free, a.holders) == (70, 30, 1)
        assert (b.hold, b.free, b.holders) == (30, 0, 2)
        assert not (await store.reserve("r", [hold("a", 100, 1)], 0, 0, 60, 0.0)).granted


async def test_reports_are_cumulative_and_a_late_ask_is_ignored(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        await store.sync("w", [ask(0, 50, 1)], [], 60, 0.0)
        await store.sync("w", [ask(20, 10, 2)], [], 60, 1.0)
        await store.sync("w", [ask(20, 10, 3)], [], 60, 2.0)  # the same report again
        [late] = await store.sync("w", [ask(5, 90, 2)], [], 60, 3.0)  # an older ask
        assert late.hold == 10
        assert await store.used(["a"], 4.0) == 20 + 10


async def test_an_expired_lease_counts_as_used_but_a_concurrency_lease_is_freed(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        await store.sync("dead", [ask(0, 40, 1)], [], 5, 100.0)
        await store.sync("dead", [ask(0, 3, 1, limit=10, keep=False, counter="c")], [], 5, 100.0)
        [alive] = await store.sync("w", [ask(0, 0, 1)], [], 5, 106.0)
        assert alive.free == 60  # the dead worker may have spent its 40
        assert await store.used(["a"], 106.0) == 40
        assert await store.used(["c"], 106.0) == 0


async def test_a_ledger_batch_is_recorded_once(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        at = 1_800_000_000.0
        batch = [SpendEntry(at, "r", "gpt", "alice", "", "", 10, 5, 0, 700),
                 SpendEntry(at + 1, "r", "gpt", "bob", "", "", 20, 5, 0, 300)]
        await store.sync("w", [], [("w.1", batch)], 60, at)
        await store.sync("w", [], [("w.1", batch)], 60, at)  # retried after a lost answer
        rows = await store.spend("consumer", at - 10, at + 10)  # type: ignore[attr-defined]
        assert [(r.key, r.requests, r.input, r.cost) for r in rows] == [
            ("alice", 1, 10, 700), ("bob", 1, 20, 300)]


async def test_an_exclusive_marker_admits_one_reservation_at_a_time(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        def marked(counter: str) -> Hold:
            return Hold(counter, (counter,), 1000, 10, 0, 3600, exclusive="budget")
        assert (await store.reserve("r1", [marked("a")], 0, 0, 60, 0.0)).granted
        busy = await store.reserve("r2", [marked("a")], 0, 0, 60, 0.0)
        assert not busy.granted and busy.busy
        assert (await store.reserve("r3", [hold("a", 1000, 10)], 0, 0, 60, 0.0)).granted
        await store.settle("r1", [Settle("a", 12, 3600, "budget")], 1.0)
        assert (await store.reserve("r2", [marked("a")], 0, 0, 60, 1.0)).granted
