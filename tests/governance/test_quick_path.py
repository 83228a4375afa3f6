"""The in-memory path (governance/quick.py): it decides exactly as the general path does,
and it steps aside (holding nothing) whenever a store or a turn has to be waited for."""

from __future__ import annotations

from pathlib import Path

from tests.governance.plans import Clock, document, governor

from semproxy.governance.governor import Governor, RequestFacts
from semproxy.types import Usage

LIMITS = {"default_max_tokens": 256,
          "limits": [{"total_tokens": 10**7, "window": "minute"},
                     {"money": 1000.0, "window": "month"}]}


async def warmed(tmp_path: Path, clock: Clock) -> Governor:
    """A governor whose leases were synced once (the first request opens the counters)."""
    gov = governor(document(dict(LIMITS)), clock, str(tmp_path / "spend.db"))
    first = await gov.reserve(RequestFacts("r", input_tokens=100))
    await gov.commit(first, Usage(50, 20), "big")
    await gov.stores.syncer("sqlite").flush()
    return gov


async def test_the_memory_path_holds_what_the_general_path_holds(tmp_path: Path) -> None:
    clock = Clock()
    quick_gov, slow_gov = await warmed(tmp_path / "a", clock), await warmed(tmp_path / "b", clock)
    quick = quick_gov.reserve_now("r", None, None, 300, None)
    assert quick is not None  # fresh leases with room: no await needed
    # The general path, step by step, on an identical governor (no memory path first).
    slow_gov.reserve_now = lambda *args: None  # type: ignore[method-assign]
    slow = await slow_gov.reserve(RequestFacts("r", input_tokens=300))
    assert quick.refusal is None and slow.refusal is None
    assert (quick.output, quick.max_tokens) == (slow.output, slow.max_tokens) == (256, 256)
    assert [(p.limit.id, p.counter, p.amount, p.held) for p in quick.placed] == \
        [(p.limit.id, p.counter, p.amount, p.held) for p in slow.placed]
    assert quick.readings == slow.readings
    assert quick.budget_fraction == slow.budget_fraction and quick.tier == slow.tier
    for q, s in zip(quick.placed, slow.placed, strict=True):
        assert q.lease is not None and s.lease is not None
        assert q.lease.inflight == s.lease.inflight == q.amount
    assert quick_gov.commit_now(quick, Usage(120, 30), "small")
    await slow_gov.commit(slow, Usage(120, 30), "small")
    assert quick.cost == slow.cost > 0
    for q, s in zip(quick.placed, slow.placed, strict=True):
        assert q.lease is not None and s.lease is not None
        assert (q.lease.inflight, q.lease.spent) == (s.lease.inflight, s.lease.spent)
        assert q.lease.inflight == 0
    await quick_gov.stores.close()
    await slow_gov.stores.close()


async def test_the_memory_path_steps_aside_without_holding_anything(tmp_path: Path) -> None:
    clock = Clock()
    gov = await warmed(tmp_path, clock)
    leases = list(gov.stores.syncer("sqlite").leases.values())
    # An input without a proven bound takes its turn through the store.
    assert gov.reserve_now("r", None, None, 300, None, proven=False) is None
    # A hold larger than the lease's room waits for a sync.
    assert gov.reserve_now("r", None, None, 10**8, None) is None
    # A lease not synced for longer than the stale time is synced before it is used.
    clock.now += 5
    assert gov.reserve_now("r", None, None, 300, None) is None
    assert all(lease.inflight == 0 for lease in leases)
    res = await gov.reserve(RequestFacts("r", input_tokens=300))  # the general path
    assert res.refusal is None and res.output == 256
    await gov.stores.close()
