"""Lease arithmetic by hand: the store's grant rule and a worker's room while syncs are open."""

from __future__ import annotations

from semproxy.governance.lease import Lease, LeaseAsk, LeaseGrant, apply_ask


def ask(spent: int, want: int, need: int = 0, seq: int = 1, limit: int = 100) -> LeaseAsk:
    return LeaseAsk("c", ("c",), limit, 60, True, seq, spent, want, need)


def test_a_grant_never_passes_what_everyone_uses_and_holds() -> None:
    # 100 limit, 70 used or held by others, none by us: we may take 30 of the 50 we want
    done = apply_ask(0, 0, 0, 70, ask(0, 50))
    assert (done.hold, done.used, done.released) == (30, 0, -30)


def test_reported_use_leaves_the_lease_and_counts_as_used() -> None:
    # we held 40 (in the 90 total) and spent 25 of it: 25 becomes use, the hold drops to 10
    done = apply_ask(40, 0, 0, 90, ask(25, 10))
    assert (done.hold, done.used, done.released) == (10, 25, 30)


def test_a_report_is_cumulative_so_a_retry_adds_nothing() -> None:
    first = apply_ask(40, 0, 0, 90, ask(25, 10, seq=1))
    again = apply_ask(first.hold, 25, 0, 90 - first.released, ask(25, 10, seq=2))
    assert again.used == 0 and again.hold == 10


def test_an_older_ask_arriving_late_changes_nothing() -> None:
    assert apply_ask(10, 25, 7, 75, ask(30, 80, seq=6)).stale


def test_a_grant_that_cannot_reach_the_need_takes_nothing() -> None:
    # 95 of 100 used: 5 free; a request needing 20 must not strand those 5 in our lease
    done = apply_ask(0, 0, 0, 95, ask(0, 50, need=20))
    assert done.hold == 0
    assert apply_ask(0, 0, 0, 95, ask(0, 50, need=5)).hold == 5


def lease(hold: int = 100) -> Lease:
    return Lease("c", ("c",), 1000, 60, True, float("inf"), hold=hold, free=500)


def test_room_is_the_hold_minus_in_flight_and_unreported_use() -> None:
    x = lease()
    x.take(30, 0.0)
    x.give(30, 12)  # answered: 12 used of the 30 held
    x.take(50, 0.0)
    assert x.room() == 100 - 50 - 12


def test_while_a_sync_is_open_the_room_is_the_smaller_of_before_and_after() -> None:
    x = lease()
    x.take(40, 0.0)
    sent = x.ask(1, 0.0, 0.0, release=True)  # gives the surplus back: wants 40
    assert sent.want == 40 and x.room() == 0  # the store may already hold only 40
    x.give(40, 40)
    x.answered(sent, LeaseGrant(40, 900, 1), 0.0, 1.0)
    assert x.room() == 40 - 40  # the 40 spent after the report are not reported yet


def test_surplus_is_capped_at_half_the_open_room_per_holder() -> None:
    x = lease(hold=0)
    x.free, x.holders, x.unit, x.last_use = 400, 2, 1000, 0.0
    assert x.surplus(0.0, 0.0) == 400 // 4
    x.last_use = -10.0  # idle: gives everything back
    assert x.surplus(0.0, 0.0) == 0
