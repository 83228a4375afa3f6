"""The governor: reserve at admission, check instance quotas in failover, commit or release.

    reservation = await governor.reserve(facts)          # admit phase
    if reservation.refusal: answer 429/503 (governance/answers.py)
    ok = await governor.reserve_instance(reservation, n)  # failover loop, per candidate
    await governor.commit(reservation, usage, instance)  # account phase, after an answer
    await governor.release(reservation)                  # account phase, nothing was sent

How a budget holds: every applicable limit's worst case (the input bound plus
the granted output, priced at the route's dearest instance before one is
picked) is held before the request goes on, in the worker's lease on that
counter (governance/lease.py), which its store granted atomically next to every
other worker's use and holds; so any number of concurrent requests, workers and
replicas see each other's holds. The answer then replaces the hold with what it
really used. Neither part of a hold can be exceeded: the upstream gets
`max_tokens`, and the input bound is never under a byte-level tokenizer's count
(governance/tokens.py). A request whose input has no proven bound (audio, files,
state kept upstream) is reserved in its store directly and takes its limits'
exclusive markers, so at most one such request runs against a limit at a time:
a budget's overshoot is at most that one request's error, whatever the
concurrency and the number of replicas (docs/en/governance.md).
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from semproxy.governance.admission import (
    Site,
    Want,
    admit_leased,
    admit_reserved,
    busy_refusal,
    drop_reserved,
    site_for,
)
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.model import Limit, Scope, Settle
from semproxy.governance.plan import GovernancePlan, RoutePolicy, resolve_key
from semproxy.governance.pricing import FREE, Price
from semproxy.governance.quick import OUTPUT_UNITS, Admits, admits_for, place_now, settle_leased
from semproxy.governance.reservation import Placed, Reservation
from semproxy.governance.turns import Turns
from semproxy.types import Usage

# The output a reservation holds when neither the client nor the route gives
# max_tokens; the upstream is then sent this max_tokens so the hold stays true.
FALLBACK_MAX_TOKENS = 4096
MAX_END_USER = 64  # characters of a client-named end user kept (ledger rows, counter keys)
_ids = itertools.count(1)
_prefix = os.urandom(6).hex()


def no_vars(name: str) -> str | None:
    """No request variables (a route whose limits read none)."""
    return None


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What the admit phase knows. `input_tokens` is the input bound
    (`tokens.input_bound(body, plan.settings.image_tokens).tokens`, not an estimate:
    the overshoot guarantee rests on it) and `input_proven` its `proven`; `var`
    resolves APISIX variables (remote_addr, http_x_..., consumer_name) for
    `rules[].key`; `max_tokens` is the client's."""

    route: str
    consumer: str | None = None
    end_user: str | None = None
    input_tokens: int = 0
    max_tokens: int | None = None
    var: Callable[[str], str | None] = no_vars
    input_proven: bool = True


class Governor:
    def __init__(self, plan: GovernancePlan, stores: StoreSet,
                 clock: Callable[[], float] = time.time, previous: Governor | None = None
                 ) -> None:
        """`previous`: the governor of the config version this one replaces. Its refusal
        counts go on (metrics only grow) and its turns are shared, so a request without
        a proven input bound on the old version and one on the new still run one at a
        time; the stores (and with them the leases) come from `StoreSet.for_plan`."""
        self.plan = plan
        self.stores = stores
        self.clock = clock
        self.lease_s = plan.settings.reservation_lease
        self.unproven_wait_s = plan.settings.unbounded_input_wait
        # Refusals by (limit label, reason): plain ints the metrics layer reads at scrape
        # time (governance/counts.py), never a Prometheus call per request.
        self.refusals: Counter[tuple[str, str]] = \
            previous.refusals if previous is not None else Counter()
        # Per (limit, scope value): the current window's counter and lease, until it ends.
        self._sites: dict[tuple[str, str], Site] = {}
        self._admits: dict[tuple[str, str | None], Admits] = {}
        self._sweep_at = _SITES_SWEEP
        self._turns: Turns = previous._turns if previous is not None else Turns()
        stores.bind_clock(clock)

    async def reserve(self, facts: RequestFacts) -> Reservation:
        res = self.reserve_now(facts.route, facts.consumer, facts.end_user, facts.input_tokens,
                               facts.max_tokens, facts.var, facts.input_proven)
        if res is not None:
            return res
        policy = self.plan.policy(facts.route)
        group = self.plan.group_of.get(facts.consumer or "")
        limits = self._admit_limits(policy, facts.consumer, group)
        high = facts.max_tokens or (policy.default_max_tokens if policy else None)
        res = Reservation(f"{_prefix}{next(_ids):x}", facts.route, facts.consumer, group,
                          (facts.end_user or "")[:MAX_END_USER] or None,
                          facts.input_tokens, high or FALLBACK_MAX_TOKENS)
        res.proven = facts.input_proven
        if not limits:
            return res
        low = min(policy.clamp_min, res.output) if policy and policy.clamp else res.output
        price = policy.worst_price if policy else FREE
        await self._place(res, limits, facts.var, price, low, None)
        if res.refusal is not None:
            self._count(res)
        elif res.output != facts.max_tokens:
            needs_output = any(p.limit.unit in OUTPUT_UNITS for p in res.placed)
            res.max_tokens = res.output if needs_output else None
        return res

    def reserve_now(self, route: str, consumer: str | None = None, end_user: str | None = None,
                    input_tokens: int = 0, max_tokens: int | None = None,
                    var: Callable[[str], str | None] = no_vars, proven: bool = True
                    ) -> Reservation | None:
        """`reserve` without an await when every lease it needs is fresh and has room for the
        full hold (governance/quick.py); None: nothing was held, await `reserve` instead."""
        admits = self._admits.get((route, consumer))
        if admits is None:
            admits = self._admits_for(route, consumer)
        res = Reservation(f"{_prefix}{next(_ids):x}", route, consumer, admits.group,
                          (end_user or "")[:MAX_END_USER] or None, input_tokens,
                          max_tokens or admits.default_max_tokens or FALLBACK_MAX_TOKENS)
        res.proven = proven
        if not admits.limits:
            return res
        if not proven and admits.follows_input:
            return None  # one at a time, through the store (the general path)
        now = self.clock()
        sites: list[Site] = []
        got = self._sites.get
        for limit, value, dynamic in admits.entries:
            if dynamic:
                value = self._scope_value(limit, res, var, None)
            if value is None:
                continue
            site = got((limit.id, value))
            if site is None or site.end <= now or site.limit is not limit:
                return None  # a new window: the general path opens its counter
            sites.append(site)
        if not sites:
            return res
        if not place_now(res, sites, admits.price,
                         self.stores.syncer(sites[0].store).settings.stale_s, now):
            return None
        if res.output != max_tokens:
            for site in sites:
                if site.limit.unit in OUTPUT_UNITS:
                    res.max_tokens = res.output
                    break
        return res

    def _admits_for(self, route: str, consumer: str | None) -> Admits:
        policy = self.plan.policy(route)
        group = self.plan.group_of.get(consumer or "")
        limits = self._admit_limits(policy, consumer, group)
        admits = admits_for(policy, group, consumer, limits,
                            policy.worst_price if policy else FREE, route)
        if len(self._admits) < _SITES_SWEEP:  # consumers come from the config: few
            self._admits[(route, consumer)] = admits
        return admits

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
        await self._place(res, limits, no_vars, policy.price(instance), low, instance)
        if res.refusal is None:
            return True
        self.refusals[(res.refusal.limit.label, "skipped")] += 1
        # Kept apart: the loop tries the next candidate; if none is left, this answers.
        res.skipped, res.refusal = res.refusal, None
        return False

    async def commit(self, res: Reservation, usage: Usage, instance: str | None = None,
                     raw_usage: Mapping[str, Any] | None = None) -> None:
        """Settle with what the answer used (also for an upstream error: requests count).
        `raw_usage` is the provider's usage object, for `cost_expr` fields beyond `usage`."""
        reserved = self._commit(res, usage, instance, raw_usage)
        if reserved:
            await self._settle_reserved(reserved)

    def commit_now(self, res: Reservation, usage: Usage, instance: str | None = None,
                   raw_usage: Mapping[str, Any] | None = None) -> bool:
        """`commit` without an await when every hold is in a lease (the usual case); False:
        nothing was done, await `commit` instead."""
        for p in res.placed:
            if p.lease is None:
                return False
        self._commit(res, usage, instance, raw_usage)
        return True

    def _commit(self, res: Reservation, usage: Usage, instance: str | None,
                raw_usage: Mapping[str, Any] | None) -> dict[tuple[str, str], list[Settle]]:
        if res.settled:
            return {}
        res.settled = True
        instance = instance or res.instance
        policy = self.plan.policy(res.route)
        price = policy.price(instance) if policy else FREE
        cost = res.cost = price.cost(usage)
        ledger = self.plan.ledger
        if ledger is not None:
            self.stores.syncer(ledger).record(
                self.clock(), res.route, instance or "", res.consumer or "", res.group or "",
                res.end_user or "", usage.input, usage.output, usage.cached_input, cost)
        if res.turns:
            self._turns.give(res.turns)
            res.turns = ()
        return settle_leased(res, usage, cost, raw_usage, self._touch, ledger or "")

    def _touch(self, store: str) -> None:
        self.stores.syncer(store).touch()

    async def release(self, res: Reservation) -> None:
        """Settle with nothing used: the request never reached an upstream."""
        if not res.settled:
            res.settled = True
            await self._settle(res, lambda lim: 0)

    def _count(self, res: Reservation) -> None:
        refusal = res.refusal
        if refusal is not None:
            self.refusals[(refusal.limit.label, "busy" if refusal.busy else refusal.reason)] += 1

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
        wants: list[Want] = []
        sites = self._sites
        for limit in limits:
            value = self._scope_value(limit, res, var, instance)
            if value is None:
                continue  # e.g. a consumer limit on an anonymous request
            site = sites.get((limit.id, value))
            if site is None or site.end <= now or site.limit is not limit:
                site = self._new_site(limit, value, now)
            fixed, per = limit.shape(res.input_tokens, price, res.output)
            wants.append(Want(site, fixed, per))
        if not wants:
            return
        if res.proven or not any(w.limit.unit.follows_input for w in wants):
            await admit_leased(self.stores, res, wants, low, instance, now)
            return
        markers = [w.site.marker for w in wants if w.limit.unit.follows_input]
        if not await self._turns.take(markers, self.unproven_wait_s):
            res.refusal = busy_refusal(next(w.limit for w in wants if w.limit.unit.follows_input))
            return
        res.turns += tuple(markers)
        if not await admit_reserved(self.stores, res, wants, low, instance, self.lease_s, now,
                                    self.unproven_wait_s):
            self._turns.give(markers)
            res.turns = res.turns[:-len(markers)]

    def _new_site(self, limit: Limit, value: str, now: float) -> Site:
        if len(self._sites) >= self._sweep_at:
            for key in [k for k, site in self._sites.items() if site.end <= now]:
                del self._sites[key]
            self._sweep_at = max(_SITES_SWEEP, 2 * len(self._sites))
        site = self._sites[(limit.id, value)] = site_for(self.stores, limit, value, now)
        return site

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

    async def _settle(self, res: Reservation, amount: Callable[[Limit], int]) -> None:
        if res.turns:
            self._turns.give(res.turns)
            res.turns = ()
        reserved: dict[tuple[str, str], list[Settle]] = {}
        for p in res.placed:
            used = amount(p.limit)
            if p.lease is not None:
                p.lease.give(p.amount if p.held else 0, used)
                self.stores.syncer(p.store).touch()
            else:
                reserved.setdefault((p.store, p.owner), []).append(
                    Settle(p.counter, used, p.ttl_s, p.marker))
        if reserved:
            await self._settle_reserved(reserved)

    async def _settle_reserved(self, reserved: dict[tuple[str, str], list[Settle]]) -> None:
        now = self.clock()
        for (name, owner), settles in reserved.items():
            await self.stores.settle(name, owner, settles, now)

    async def _drop(self, res: Reservation, placed: list[Placed]) -> None:
        """Give back holds placed for nothing (another instance is tried)."""
        for p in placed:
            if p.lease is not None:
                p.lease.give(p.amount if p.held else 0, 0)
        await drop_reserved(self.stores, [p for p in placed if p.lease is None], self.clock())
        res.placed = [p for p in res.placed if p not in placed]


_SITES_SWEEP = 10_000  # cached sites before the ended ones are swept
