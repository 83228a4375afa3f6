"""The governor: reserve at admission, check instance quotas in failover, commit or release.

    reservation = await governor.reserve(facts)          # admit phase
    if reservation.refusal: answer 429/503 (governance/answers.py)
    ok = await governor.reserve_instance(reservation, n)  # failover loop, per candidate
    await governor.commit(reservation, usage, instance)  # account phase, after an answer
    await governor.release(reservation)                  # account phase, nothing was sent

How a budget holds: every applicable limit's worst case (estimated input plus
the granted output, priced at the route's dearest instance before one is
picked) is held atomically in its store before the request goes on, so any
number of concurrent requests and replicas see each other's holds. The answer
then replaces the hold with what it really used. The output part cannot be
exceeded (the upstream gets `max_tokens`), so a budget overshoots only by what
the input estimate missed on the requests in flight when it ran out
(docs/en/governance.md). Limits in different stores are reserved store by
store; a refusal in a later store releases the earlier ones.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.model import Hold, Limit, Scope, Settle, Unit
from semproxy.governance.plan import GovernancePlan, RoutePolicy, resolve_key
from semproxy.governance.pricing import FREE, Price
from semproxy.governance.reservation import (
    Placed,
    Reading,
    Refusal,
    Reservation,
    refusal_for,
)
from semproxy.governance.store import SpendEntry, StoreError
from semproxy.types import Usage

# The output a reservation holds when neither the client nor the route gives
# max_tokens; the upstream is then sent this max_tokens so the hold stays true.
FALLBACK_MAX_TOKENS = 4096
MAX_END_USER = 64  # characters of a client-named end user kept (ledger rows, counter keys)
_ids = itertools.count(1)
_prefix = os.urandom(6).hex()


def _no_vars(name: str) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What the admit phase knows. `var` resolves APISIX variables (remote_addr,
    http_x_..., consumer_name) for `rules[].key`; `max_tokens` is the client's."""

    route: str
    consumer: str | None = None
    end_user: str | None = None
    input_tokens: int = 0
    max_tokens: int | None = None
    var: Callable[[str], str | None] = _no_vars


class Governor:
    def __init__(self, plan: GovernancePlan, stores: StoreSet,
                 clock: Callable[[], float] = time.time) -> None:
        self.plan = plan
        self.stores = stores
        self.clock = clock
        self.lease_s = plan.settings.reservation_lease

    async def reserve(self, facts: RequestFacts) -> Reservation:
        policy = self.plan.policy(facts.route)
        group = self.plan.group_of.get(facts.consumer or "")
        limits = self._admit_limits(policy, facts.consumer, group)
        high = facts.max_tokens or (policy.default_max_tokens if policy else None)
        res = Reservation(f"{_prefix}{next(_ids):x}", facts.route, facts.consumer, group,
                          (facts.end_user or "")[:MAX_END_USER] or None,
                          facts.input_tokens, high or FALLBACK_MAX_TOKENS)
        if not limits:
            return res
        low = min(policy.clamp_min, res.output) if policy and policy.clamp else res.output
        price = policy.worst_price if policy else FREE
        await self._place(res, limits, facts.var, price, low, None)
        if res.refusal is None and (res.output != facts.max_tokens):
            needs_output = any(p.limit.unit in _OUTPUT_UNITS for p in res.placed)
            res.max_tokens = res.output if needs_output else None
        return res

    async def reserve_instance(self, res: Reservation, instance: str) -> bool:
        """Place `instance`'s own quotas (releasing a previous instance's); False: skip it."""
        policy = self.plan.policy(res.route)
        limits = policy.instances.get(instance, ()) if policy else ()
        if res.instance is not None and res.instance != instance:
            await self._drop(res, res.placed_for_instance())
        res.instance = instance
        if not limits or res.refusal is not None:
            return res.refusal is None
        assert policy is not None
        low = min(policy.clamp_min, res.output) if policy.clamp else res.output
        await self._place(res, limits, _no_vars, policy.price(instance), low, instance)
        if res.refusal is None:
            return True
        # Kept apart: the loop tries the next candidate; if none is left, this answers.
        res.skipped, res.refusal = res.refusal, None
        return False

    async def commit(self, res: Reservation, usage: Usage, instance: str | None = None) -> None:
        """Settle with what the answer used (also for an upstream error: requests count)."""
        if res.settled:
            return
        res.settled = True
        instance = instance or res.instance
        policy = self.plan.policy(res.route)
        price = policy.price(instance) if policy else FREE
        cost = price.cost(usage)
        entry = SpendEntry(self.clock(), res.route, instance or "", res.consumer or "",
                           res.group or "", res.end_user or "", usage.input, usage.output,
                           usage.cached_input, cost)
        await self._settle(res, lambda lim: lim.charge(usage.input, usage.output, cost), entry)

    async def release(self, res: Reservation) -> None:
        """Settle with nothing used: the request never reached an upstream."""
        if not res.settled:
            res.settled = True
            await self._settle(res, lambda lim: 0, None)

    def _admit_limits(self, policy: RoutePolicy | None, consumer: str | None,
                      group: str | None) -> list[Limit]:
        limits = list(policy.admit) if policy else []
        if consumer is not None:
            limits += self.plan.consumers.get(consumer, ())
        if group is not None:
            limits += self.plan.groups.get(group, ())
        return limits

    async def _place(self, res: Reservation, limits: Sequence[Limit],
                     var: Callable[[str], str | None], price: Price, low: int,
                     instance: str | None) -> None:
        now = self.clock()
        by_store: dict[str, list[tuple[Limit, Hold, float]]] = {}
        for limit in limits:
            value = self._scope_value(limit, res, var, instance)
            if value is None:
                continue  # e.g. a consumer limit on an anonymous request
            slots = limit.window.slots(now)
            base = f"{limit.id}|{value}|"
            fixed, per = limit.shape(res.input_tokens, price)
            hold = Hold(base + slots.charge, tuple(base + b for b in slots.reads),
                        limit.amount, fixed, per, slots.ttl_s)
            by_store.setdefault(limit.store, []).append((limit, hold, slots.reset_s))
        step = res.next_step()
        for name, items in by_store.items():
            if not await self._place_in(res, step, name, items, low, instance, now):
                await self._drop(res, [p for p in res.placed if p.owner == step])
                return

    async def _place_in(self, res: Reservation, step: str, name: str,
                        items: list[tuple[Limit, Hold, float]], low: int,
                        instance: str | None, now: float) -> bool:
        holds = [hold for _, hold, _ in items]
        health = self.stores.health(name)
        try:
            if health.is_down(now):
                raise StoreError(f"{name}: not retried until {health.down_until:.3f}")
            outcome = await self.stores.get(name).reserve(step, holds, low, res.output,
                                                          self.lease_s, now)
            health.recovered()
        except StoreError as exc:
            health.failed(now, exc)
            return self._on_store_error(res, step, name, items)
        if not outcome.granted:
            limit, _, reset_s = items[outcome.refused]
            res.refusal = refusal_for(limit, outcome.remaining[0], reset_s)
            res.readings.append(Reading(limit, 0, reset_s, instance))
            return False
        res.output = outcome.output
        for (limit, hold, reset_s), left in zip(items, outcome.remaining, strict=True):
            res.placed.append(Placed(limit, name, step, hold.counter, hold.ttl_s, True))
            res.readings.append(Reading(limit, max(left, 0), reset_s, instance))
            if limit.unit is Unit.MONEY and limit.amount:
                self._note_budget(res, limit, left)
        return True

    def _on_store_error(self, res: Reservation, step: str, name: str,
                        items: list[tuple[Limit, Hold, float]]) -> bool:
        deny = any(limit.deny_on_store_error for limit, _, _ in items)
        self.stores.health(name).decided(deny)
        if deny:
            limit = next(lim for lim, _, _ in items if lim.deny_on_store_error)
            res.refusal = Refusal(limit, "store", 503, self.stores.health(name).retry_after_s,
                                  0, "limit store unavailable")
            return False
        res.placed += [Placed(lim, name, step, hold.counter, hold.ttl_s, False)
                       for lim, hold, _ in items]
        return True

    @staticmethod
    def _note_budget(res: Reservation, limit: Limit, left: int) -> None:
        share = 1 - max(left, 0) / limit.amount
        if share > res.budget_fraction:
            res.budget_fraction = share
            res.tier = sum(1 for t in limit.tiers if share >= t)

    @staticmethod
    def _scope_value(limit: Limit, res: Reservation, var: Callable[[str], str | None],
                     instance: str | None) -> str | None:
        scope = limit.scope
        if scope is Scope.ROUTE:
            return res.route
        if scope is Scope.CONSUMER:
            return res.consumer
        if scope is Scope.GROUP:
            return res.group
        if scope is Scope.END_USER:
            return res.end_user
        if scope is Scope.INSTANCE:
            return f"{res.route}/{instance}"
        return resolve_key(limit.key or "", var)

    async def _settle(self, res: Reservation, amount: Callable[[Limit], int],
                      entry: SpendEntry | None) -> None:
        now = self.clock()
        groups: dict[tuple[str, str], list[Settle]] = {}
        for p in res.placed:
            groups.setdefault((p.store, p.owner), []).append(
                Settle(p.counter, amount(p.limit), p.ttl_s))
        ledger = self.plan.ledger if entry is not None else None
        if ledger is not None and not any(store == ledger for store, _ in groups):
            groups[(ledger, f"{res.id}.0")] = []
        for (name, owner), settles in groups.items():
            record = entry if name == ledger else None
            ledger = None if record is not None else ledger
            await self.stores.settle(name, owner, settles, now, record)

    async def _drop(self, res: Reservation, placed: list[Placed]) -> None:
        """Give back holds placed for nothing (a later store refused, another instance)."""
        now = self.clock()
        groups: dict[tuple[str, str], list[Settle]] = {}
        for p in placed:
            groups.setdefault((p.store, p.owner), []).append(Settle(p.counter, 0, p.ttl_s))
        for (name, owner), settles in groups.items():
            await self.stores.settle(name, owner, settles, now, None)
        res.placed = [p for p in res.placed if p not in placed]


_OUTPUT_UNITS = (Unit.OUTPUT_TOKENS, Unit.TOTAL_TOKENS, Unit.MONEY)
