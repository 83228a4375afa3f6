"""Placing a request's holds: in the worker's leases (the normal way) or as one reservation.

`Site` is one limit's counter for one scope value in the current window (cached
by the governor until the window's bucket ends, so a request formats no keys and
does no calendar arithmetic); a request's want on it is `fixed + per * output`
(model.py `Limit.shape`). `admit_leased` checks
every want against its lease's room; a lease that is stale or too short asks
its store for more (one sync per store, shared with the other requests waiting
on it), then every want is checked again and, if all fit, all are placed
without an await in between, so no other request can slip in. A store that
cannot be reached leaves its wants to their limit's `on_store_error`: deny
refuses the request (503), allow lets it through unheld (its use is still
reported when the store is back).

`admit_reserved` is the old way, one atomic reservation per store, for a request
whose input has no proven bound: its input-dependent holds also take the
limit's exclusive marker, so at most one such request at a time can miss its
bound on a limit, and a budget's overshoot stays one request's error.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass

from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.lease import Lease
from semproxy.governance.model import Hold, Limit, Settle, Unit
from semproxy.governance.reservation import Placed, Reading, Refusal, Reservation, refusal_for
from semproxy.governance.store import StoreError

BUSY_RETRY_S = 1.0
_MONEY = Unit.MONEY  # a module name: an enum member read costs more on Python 3.11
_SYNC_ROUNDS = 2  # store syncs a request may wait for before its answer is final


@dataclass(slots=True, eq=False)
class Site:
    limit: Limit
    store: str
    counter: str
    reads: tuple[str, ...]
    end: float  # when the charged bucket ends (inf: no window)
    ttl_s: int
    marker: str  # the limit's exclusive marker (for a request without a proven bound)
    lease: Lease | None = None

    def reset_s(self, now: float) -> float:
        return 0.0 if self.end == math.inf else self.end - now


@dataclass(slots=True)
class Want:
    """A request's hold on a site: `fixed + per * output`."""

    site: Site
    fixed: int
    per: int

    @property
    def limit(self) -> Limit:
        return self.site.limit

    @property
    def store(self) -> str:
        return self.site.store


def site_for(stores: StoreSet, limit: Limit, value: str, now: float) -> Site:
    slots = limit.window.slots(now)
    base = f"{limit.id}|{value}|"
    reads = (base + slots.charge,) if len(slots.reads) == 1 else \
        tuple(base + b for b in slots.reads)
    end = math.inf if limit.window.seconds == 0 and not limit.window.month else \
        now + slots.reset_s
    site = Site(limit, limit.store, base + slots.charge, reads, end, slots.ttl_s, base)
    site.lease = stores.syncer(limit.store).lease(site.counter, reads, limit.amount,
                                                  slots.ttl_s, limit.keeps_expired, end)
    return site


async def admit_leased(stores: StoreSet, res: Reservation, wants: list[Want], low: int,
                       instance: str | None, now: float) -> bool:
    high = res.output
    stale = stores.syncer(wants[0].store).settings.stale_s
    leases: list[Lease] = []
    roomy = True  # the common case: every lease is fresh and has room for the full hold
    for w in wants:
        lease = w.site.lease
        assert lease is not None
        leases.append(lease)
        if roomy and (now - lease.synced_at >= stale or lease.room() < w.fixed + w.per * high):
            roomy = False
    if roomy:
        return _place(res, wants, leases, set(), low, high, instance, now)
    return await _admit_slow(stores, res, wants, leases, low, high, instance, now)


async def _admit_slow(stores: StoreSet, res: Reservation, wants: list[Want],
                      leases: list[Lease], low: int, high: int, instance: str | None,
                      now: float) -> bool:
    unheld: set[int] = set()
    for _ in range(_SYNC_ROUNDS):
        short = [i for i, (w, lease) in enumerate(zip(wants, leases, strict=True))
                 if i not in unheld and _is_short(stores, w, lease, low, high, now)]
        if not short:
            break
        if not await _sync(stores, res, wants, leases, short, low, high, unheld, now):
            return False
    return _place(res, wants, leases, unheld, low, high, instance, now)


def _is_short(stores: StoreSet, w: Want, lease: Lease, low: int, high: int, now: float
              ) -> bool:
    """Whether a want should wait for a sync: its lease is stale, or too small and the
    store may have more. A store that answered within the last sync interval that not
    even the smallest hold fits is not asked again: a refusal can rest on a view of the
    others that old (a flood of refused requests costs no store calls)."""
    syncer = stores.syncer(w.store)
    if not syncer.is_fresh(lease, now):
        return True
    room = lease.room()
    if room >= w.fixed + w.per * high:
        return False
    recent = now - lease.synced_at < syncer.settings.interval_s
    return not (recent and max(lease.free, 0) + room < w.fixed + w.per * low)


async def _sync(stores: StoreSet, res: Reservation, wants: list[Want], leases: list[Lease],
                short: list[int], low: int, high: int, unheld: set[int], now: float) -> bool:
    """Ask the short wants' stores for room; False when a store failed and a limit denies.
    A lease asks for the full holds of the requests waiting on it, and takes a grant
    that covers at least the smallest of them at its lowest output (clamping)."""
    by_store: dict[str, list[int]] = {}
    for i in short:
        by_store.setdefault(wants[i].store, []).append(i)
        least = wants[i].fixed + wants[i].per * low
        lease = leases[i]
        lease.demand_min = min(lease.demand_min, least) if lease.demand else least
        lease.demand += wants[i].fixed + wants[i].per * high
    try:
        names = list(by_store)
        results = await asyncio.gather(*(stores.syncer(n).refresh() for n in names),
                                       return_exceptions=True)
    finally:
        for i in short:
            leases[i].demand -= wants[i].fixed + wants[i].per * high
    for name, result in zip(names, results, strict=True):
        if isinstance(result, StoreError):
            if not _on_store_error(stores, res, wants, by_store[name], unheld, now):
                return False
        elif isinstance(result, BaseException):
            raise result
    return True


def _on_store_error(stores: StoreSet, res: Reservation, wants: list[Want], items: list[int],
                    unheld: set[int], now: float) -> bool:
    deny = [wants[i].limit for i in items if wants[i].limit.deny_on_store_error]
    health = stores.health(wants[items[0]].store)
    health.decided(bool(deny))
    if deny:
        res.refusal = Refusal(deny[0], "store", 503, health.retry_after_s, 0,
                              "limit store unavailable")
        return False
    unheld.update(items)
    return True


def _place(res: Reservation, wants: list[Want], leases: list[Lease], unheld: set[int],
           low: int, high: int, instance: str | None, now: float) -> bool:
    out = high
    for i, (w, lease) in enumerate(zip(wants, leases, strict=True)):
        if i in unheld:
            continue
        free = lease.room() - w.fixed
        if free < 0 or free < w.per * low:
            reset_s = w.site.reset_s(now)
            res.refusal = refusal_for(w.limit, lease.remaining(), reset_s)
            res.readings.append(Reading(w.limit, 0, reset_s, instance))
            return False
        if w.per:
            out = min(out, free // w.per)
    res.output = out
    mono = time.monotonic()
    placed, readings = res.placed, res.readings
    for i, (w, lease) in enumerate(zip(wants, leases, strict=True)):
        site, held = w.site, i not in unheld
        amount = w.fixed + w.per * out
        if held:
            lease.take(amount, mono)
        placed.append(Placed(site.limit, site.store, "", site.counter, site.ttl_s, held,
                             amount, lease))
        left = lease.remaining() if held else site.limit.amount
        readings.append(Reading(site.limit, max(left, 0), site.reset_s(now), instance))
        if site.limit.unit is Unit.MONEY:
            note_budget(res, site.limit, left)
    return True


async def admit_reserved(stores: StoreSet, res: Reservation, wants: list[Want], low: int,
                         instance: str | None, lease_s: float, now: float, wait_s: float
                         ) -> bool:
    """Reserve in each store; while another process holds a marker, retry with backoff
    for up to `wait_s` (this process's own requests queue in `Turns`)."""
    deadline, pause = time.monotonic() + wait_s, 0.005
    while True:
        if await _reserve_all(stores, res, wants, low, instance, lease_s, now):
            return True
        if res.refusal is None or not res.refusal.busy or time.monotonic() + pause > deadline:
            return False
        res.refusal, res.readings = None, res.readings[:-1]
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.2)


async def _reserve_all(stores: StoreSet, res: Reservation, wants: list[Want], low: int,
                       instance: str | None, lease_s: float, now: float) -> bool:
    by_store: dict[str, list[Want]] = {}
    for w in wants:
        by_store.setdefault(w.store, []).append(w)
    step = res.next_step()
    for name, items in by_store.items():
        if not await _reserve_in(stores, res, step, name, items, low, instance, lease_s, now):
            await drop_reserved(stores, [p for p in res.placed if p.owner == step], now)
            res.placed = [p for p in res.placed if p.owner != step]
            return False
    return True


async def _reserve_in(stores: StoreSet, res: Reservation, step: str, name: str,
                      items: list[Want], low: int, instance: str | None, lease_s: float,
                      now: float) -> bool:
    holds = [Hold(w.site.counter, w.site.reads, w.limit.amount, w.fixed, w.per, w.site.ttl_s,
                  w.site.marker if w.limit.unit.follows_input else "") for w in items]
    health = stores.health(name)
    try:
        if health.is_down(now):
            raise StoreError(f"{name}: not retried until {health.down_until:.3f}")
        outcome = await stores.store(name).reserve(step, holds, low, res.output, lease_s, now)
        health.recovered()
    except StoreError as exc:
        health.failed(now, exc)
        unheld: set[int] = set()
        if not _on_store_error(stores, res, items, list(range(len(items))), unheld, now):
            return False
        res.placed += [Placed(w.limit, name, step, h.counter, h.ttl_s, False, 0, None,
                              h.exclusive) for w, h in zip(items, holds, strict=True)]
        return True
    if not outcome.granted:
        w = items[outcome.refused]
        reset_s = w.site.reset_s(now)
        if outcome.busy:
            res.refusal = busy_refusal(w.limit)
        else:
            res.refusal = refusal_for(w.limit, outcome.remaining[0], reset_s)
        res.readings.append(Reading(w.limit, 0, reset_s, instance))
        return False
    res.output = outcome.output
    for w, hold, left in zip(items, holds, outcome.remaining, strict=True):
        amount = hold.fixed + hold.per_output * outcome.output
        res.placed.append(Placed(w.limit, name, step, hold.counter, hold.ttl_s, True, amount,
                                 None, hold.exclusive))
        res.readings.append(Reading(w.limit, max(left, 0), w.site.reset_s(now), instance))
        note_budget(res, w.limit, left)
    return True


async def drop_reserved(stores: StoreSet, placed: list[Placed], now: float) -> None:
    """Give back single reservations placed for nothing (a later store refused)."""
    groups: dict[tuple[str, str], list[Settle]] = {}
    for p in placed:
        groups.setdefault((p.store, p.owner), []).append(Settle(p.counter, 0, p.ttl_s,
                                                                p.marker))
    for (name, owner), settles in groups.items():
        await stores.settle(name, owner, settles, now)


def note_budget(res: Reservation, limit: Limit, left: int) -> None:
    if limit.unit is not _MONEY or not limit.amount:
        return
    share = 1 - (left if left > 0 else 0) / limit.amount
    if share > res.budget_fraction:
        res.budget_fraction = share
    # The most tiers any of the request's budgets has crossed (a budget without tiers
    # may be the fuller one and still cross none).
    if limit.tiers:
        res.tier = max(res.tier, sum(1 for t in limit.tiers if share >= t))


def busy_refusal(limit: Limit) -> Refusal:
    message = (f"another request whose input cannot be counted in advance is running against "
               f"{limit.scope.value.replace('_', ' ')} limit {limit.label!r}; retry shortly")
    return Refusal(limit, "rate", 429, BUSY_RETRY_S, 0, message, busy=True)


