"""The in-memory path of admission and settling: what most requests take, without an await.

`Governor.reserve` first tries `place_now`: when the request's input bound is
proven (or no limit follows input) and every lease it needs is fresh and has
room for the full hold, the holds are placed in memory exactly as
`admission.admit_leased` would place them (nothing can be refused or clamped:
every want fits at the full output), and no coroutine, `Want` or sync is made.
Anything else (a stale or short lease, an unproven input, a window that just
rolled over) returns None before touching a lease, and the governor takes the
general path. `settle_leased` is the same for the account phase: holds placed
in leases are settled with a few additions; reservations placed in a store
directly are returned for the caller to settle with an await.

The rules are the general path's; only the bookkeeping around them is gone:
a route's limits for a consumer are looked up once per config version
(`Admits`), and each limit's counter (its `Site`) once per window.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from semproxy.governance.admission import Site, note_budget
from semproxy.governance.model import Limit, Scope, Settle, Unit
from semproxy.governance.plan import RoutePolicy
from semproxy.governance.pricing import Price
from semproxy.governance.reservation import Placed, Reading, Reservation
from semproxy.types import Usage

# Named tuples made without their Python-level __new__ (same objects, a C call).
_new = tuple.__new__
# Units whose hold grows with the output granted (the upstream must then be sent it).
OUTPUT_UNITS = (Unit.OUTPUT_TOKENS, Unit.TOTAL_TOKENS, Unit.MONEY, Unit.EXPRESSION)
# Members as module names: on Python 3.11 `Unit.MONEY` goes through EnumType.__getattr__.
_TOTAL, _MONEY = Unit.TOTAL_TOKENS, Unit.MONEY


@dataclass(frozen=True, slots=True)
class Admits:
    """What admission reads from the plan for one route and consumer (fixed per version)."""

    policy: RoutePolicy | None
    group: str | None
    limits: tuple[Limit, ...]
    # Per limit: the limit, its scope value (None: it does not apply) and whether that
    # value is found per request instead (end user, APISIX rule key).
    entries: tuple[tuple[Limit, str | None, bool], ...]
    follows_input: bool  # a limit depends on the input bound
    price: Price
    default_max_tokens: int | None


def admits_for(policy: RoutePolicy | None, group: str | None, consumer: str | None,
               limits: list[Limit], price: Price, route: str) -> Admits:
    values: list[str | None] = []
    dynamic: list[bool] = []
    for limit in limits:
        scope = limit.scope
        fixed = {Scope.ROUTE: route, Scope.CONSUMER: consumer, Scope.GROUP: group}
        values.append(fixed.get(scope))
        dynamic.append(scope not in fixed)
    return Admits(policy, group, tuple(limits), tuple(zip(limits, values, dynamic, strict=True)),
                  any(limit.unit.follows_input for limit in limits), price,
                  policy.default_max_tokens if policy is not None else None)


def place_now(res: Reservation, sites: list[Site], price: Price, stale_s: float,
              now: float) -> bool:
    """Place a hold on each site's lease if every lease is fresh and has room for the full
    output; False (and nothing placed) otherwise."""
    high = res.output
    tokens = res.input_tokens
    holds: list[tuple[Site, int, int]] = []  # the hold on each site, and its lease's room
    for site in sites:
        lease = site.lease
        if lease is None or now - lease.synced_at >= stale_s:
            return False
        limit = site.limit
        unit = limit.unit
        if unit is _TOTAL:
            fixed, per = tokens, 1
        elif unit is _MONEY:
            fixed, per = tokens * price.input, price.output
        else:
            fixed, per = limit.shape(tokens, price, high)
        room = lease.room() if lease.pending else \
            lease.hold - lease.inflight - (lease.spent - lease.reported)
        amount = fixed + per * high
        if room < amount:
            return False
        holds.append((site, amount, room))
    mono = time.monotonic()
    placed, readings = res.placed, res.readings
    for site, amount, room in holds:
        lease = site.lease
        assert lease is not None
        lease.inflight += amount
        lease.asked += amount
        lease.unit = amount
        lease.last_use = mono
        limit = site.limit
        placed.append(_new(Placed, (limit, site.store, "", site.counter, site.ttl_s, True,
                                    amount, lease, "")))
        if lease.pending:
            left = lease.remaining()
        else:  # Lease.remaining, with the room known: the hold just taken is in flight
            room -= amount
            left = (lease.free if lease.free > 0 else 0) + (room if room > 0 else 0)
        end = site.end
        readings.append(_new(Reading, (limit, left, 0.0 if end == math.inf else end - now,
                                       None)))
        if limit.unit is _MONEY:
            note_budget(res, limit, left)
    return True


def settle_leased(res: Reservation, usage: Usage, cost: int, raw: Mapping[str, Any] | None,
                  touch: Callable[[str], None], touched: str = ""
                  ) -> dict[tuple[str, str], list[Settle]]:
    """Settle every hold placed in a lease with what the answer used; the holds reserved in
    a store directly, by (store, owner), for the caller to settle there. `touched`: a
    store whose syncer was told already (the ledger's)."""
    reserved: dict[tuple[str, str], list[Settle]] = {}
    for p in res.placed:
        limit = p.limit
        unit = limit.unit
        if unit is _TOTAL:
            used = usage.input + usage.output
        elif unit is _MONEY:
            used = cost
        elif limit.cost is not None:
            used = limit.cost.evaluate(usage, raw) or 0
        else:
            used = limit.charge(usage.input, usage.output, cost)
        lease = p.lease
        if lease is not None:
            lease.inflight -= p.amount if p.held else 0
            lease.spent += used
            if p.store != touched:
                touch(p.store)
                touched = p.store
        else:
            reserved.setdefault((p.store, p.owner), []).append(
                Settle(p.counter, used, p.ttl_s, p.marker))
    return reserved
