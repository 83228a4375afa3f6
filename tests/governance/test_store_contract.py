"""Every store implements the same arithmetic: checked against all three, real Redis included."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.fakes.redis_server import RedisServer
from tests.governance.stores import KINDS, open_store

from semproxy.governance.model import Hold, Settle
from semproxy.governance.store import SpendEntry


def hold(counter: str, limit: int, fixed: int, per: int = 0,
         reads: tuple[str, ...] | None = None) -> Hold:
    return Hold(counter, reads or (counter,), limit, fixed, per, 3600)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(kind: str, request: pytest.FixtureRequest) -> RedisServer | None:
    return request.getfixturevalue("redis") if kind == "redis" else None


async def test_a_hold_that_fits_is_placed_and_one_that_does_not_is_refused(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        first = await store.reserve("r1", [hold("a", 10, 6)], 0, 0, 60, 1000.0)
        assert first.granted and first.remaining == (4,)
        second = await store.reserve("r2", [hold("a", 10, 6)], 0, 0, 60, 1000.0)
        assert not second.granted and second.refused == 0 and second.remaining == (4,)
        assert await store.used(["a"], 1000.0) == 6


async def test_all_holds_or_none(kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        refused = await store.reserve("r1", [hold("a", 10, 5), hold("b", 3, 4)], 0, 0, 60, 0.0)
        assert not refused.granted and refused.refused == 1
        assert await store.used(["a"], 0.0) == 0  # the first hold was not left behind


async def test_output_is_clamped_to_what_every_limit_allows(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        # tokens: 100 - 30 input -> 70 output; money: (1000 - 30*2) / 5 -> 188 output
        out = await store.reserve("r1", [hold("t", 100, 30, 1), hold("m", 1000, 60, 5)],
                                  10, 500, 60, 0.0)
        assert out.granted and out.output == 70 and out.remaining == (0, 590)
        again = await store.reserve("r2", [hold("t", 100, 30, 1)], 10, 500, 60, 0.0)
        assert not again.granted


async def test_settle_replaces_the_hold_with_use_once(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        await store.reserve("r1", [hold("a", 100, 40)], 0, 0, 60, 0.0)
        await store.settle("r1", [Settle("a", 25, 3600)], 1.0)
        await store.settle("r1", [Settle("a", 25, 3600)], 2.0)  # a retry: no effect
        assert await store.used(["a"], 3.0) == 25


async def test_an_abandoned_hold_expires_with_its_lease(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        assert (await store.reserve("r1", [hold("a", 10, 10)], 0, 0, 5, 100.0)).granted
        assert not (await store.reserve("r2", [hold("a", 10, 1)], 0, 0, 5, 104.0)).granted
        assert (await store.reserve("r3", [hold("a", 10, 10)], 0, 0, 5, 105.5)).granted


async def test_rolling_buckets_are_summed(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        await store.reserve("r1", [hold("b1", 10, 4)], 0, 0, 60, 0.0)
        await store.settle("r1", [Settle("b1", 4, 3600)], 0.0)
        later = await store.reserve("r2", [hold("b2", 10, 7, reads=("b2", "b1"))], 0, 0, 60, 0.0)
        assert not later.granted and later.remaining == (6,)


async def test_spend_is_summed_per_dimension(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    async with open_store(kind, tmp_path, server) as store:
        for i, consumer in enumerate(["alice", "bob", "alice"]):
            entry = SpendEntry(1_800_000_000.0 + i, "r", "gpt", consumer, "team", "",
                               100, 10, 20, 1000 * (i + 1))
            await store.settle(f"s{i}", [], entry.at, entry)
        rows = await store.spend("consumer", 1_800_000_000.0, 1_800_000_100.0)  # type: ignore[attr-defined]
        assert [(r.key, r.requests, r.input, r.cost) for r in rows] == [
            ("alice", 2, 200, 4000), ("bob", 1, 100, 2000)]


async def test_a_month_budget_of_a_million_counts_in_whole_nanos(
        kind: str, tmp_path: Path, server: RedisServer | None) -> None:
    big = 10**15  # $1,000,000 in nanos: Lua must not answer 1e+15
    async with open_store(kind, tmp_path, server) as store:
        out = await store.reserve("r1", [hold("m", big, 12_345)], 0, 0, 60, 0.0)
        assert out.granted and out.remaining == (big - 12_345,)
