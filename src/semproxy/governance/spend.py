"""Reading spend: what was spent (the ledger) and what is left (the limits' counters).

For the admin API, the playground and `semproxy spend`; nothing here is on the
request path, and nothing needs it: a reader opens the plan's stores itself
(`Governor(plan, StoreSet.for_plan(plan))`) and reads the SQLite file or Redis
that the gateways write. Periods are UTC calendar periods (governance/periods.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from semproxy.governance.governor import Governor
from semproxy.governance.model import Limit, Scope, Unit
from semproxy.governance.periods import PERIODS, buckets, period_range
from semproxy.governance.plan import GovernancePlan, resolve_key
from semproxy.governance.pricing import to_money
from semproxy.governance.store import SpendRow

__all__ = ["PERIODS", "Allowance", "Bucket", "allowance_body", "allowances", "applicable",
           "report", "row_body", "series", "spend", "stamp"]


@dataclass(frozen=True, slots=True)
class Allowance:
    """One limit that applies to a consumer: how much of it is used (or held) and left.

    `owner` is who shares the counter (the consumer, its group, the route, an
    instance as `route/name`); `route` is set for a route's limits. `used` and
    `remaining` are None for a limit counted in each process's memory
    (`local_counters: process`), which no reader outside that process can see.
    """

    limit: Limit
    owner: str
    route: str | None
    used: int | None
    remaining: int | None
    reset_s: float


@dataclass(frozen=True, slots=True)
class Bucket:
    """Spend summed over one period of a series."""

    start: float
    end: float
    rows: list[SpendRow]


async def spend(gov: Governor, dimension: str, period: str, back: int = 0) -> list[SpendRow]:
    """Spend per consumer, group, route, instance or end user over a UTC period
    (`back` periods before the current one)."""
    ledger = gov.plan.ledger
    if ledger is None:
        return []
    since, until = period_range(period, gov.clock(), back)
    return await gov.stores.get(ledger).spend(dimension, since, until)


async def series(gov: Governor, dimension: str, step: str, points: int) -> list[Bucket]:
    """Spend per value of `dimension` in each of the last `points` periods of `step`."""
    ledger = gov.plan.ledger
    spans = buckets(step, points, gov.clock())
    if ledger is None:
        return [Bucket(start, end, []) for start, end in spans]
    view = gov.stores.get(ledger)
    return [Bucket(start, end, await view.spend(dimension, start, end)) for start, end in spans]


def applicable(plan: GovernancePlan, consumer: str) -> Iterator[tuple[Limit, str, str | None]]:
    """Every limit a request of `consumer` is held to, with the counter's owner and
    route: its own, its group's, and each route's (at admission and per instance).
    A rule keyed by anything but `$consumer_name` depends on the request and is left out."""
    group = plan.group_of.get(consumer)
    for limit in plan.consumers.get(consumer, ()):
        yield limit, consumer, None
    if group is not None:
        for limit in plan.groups.get(group, ()):
            yield limit, group, None
    owners = {Scope.CONSUMER: consumer, Scope.GROUP: group}
    for route, policy in plan.routes.items():
        for limit in policy.admit:
            if limit.scope is Scope.KEY:
                owner = resolve_key(limit.key or "", {"consumer_name": consumer}.get)
            else:
                owner = route if limit.scope is Scope.ROUTE else owners.get(limit.scope)
            if owner is not None:
                yield limit, owner, route
        for name, limits in policy.instances.items():
            for limit in limits:
                yield limit, f"{route}/{name}", route


async def allowances(gov: Governor, consumer: str) -> list[Allowance]:
    """Every limit that applies to the consumer: used (or held) and remaining now."""
    plan, now = gov.plan, gov.clock()
    out = []
    for limit, owner, route in applicable(plan, consumer):
        slots = limit.window.slots(now)
        if plan.stores[limit.store].kind == "memory":
            out.append(Allowance(limit, owner, route, None, None, slots.reset_s))
            continue
        used = await gov.stores.get(limit.store).used(
            [f"{limit.id}|{owner}|{b}" for b in slots.reads], now)
        out.append(Allowance(limit, owner, route, used, max(limit.amount - used, 0),
                             slots.reset_s))
    return out


def stamp(at: float) -> str:
    """A moment as ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def row_body(row: SpendRow) -> dict[str, Any]:
    """A ledger row as JSON (the admin API's and `semproxy spend --json`'s shape)."""
    return {"key": row.key, "requests": row.requests, "input_tokens": row.input,
            "output_tokens": row.output, "cached_input_tokens": row.cached_input,
            "cost": to_money(row.cost)}


def allowance_body(a: Allowance, now: float) -> dict[str, Any]:
    """An allowance as JSON: amounts in the limit's unit (money in currency units)."""
    scale = to_money if a.limit.unit is Unit.MONEY else int
    windowed = a.reset_s > 0
    return {"limit": a.limit.label, "id": a.limit.id, "scope": a.limit.scope.value,
            "owner": a.owner, "route": a.route, "instance": a.limit.instance,
            "unit": a.limit.unit.value, "window": a.limit.window.describe(),
            "amount": scale(a.limit.amount),
            "used": None if a.used is None else scale(a.used),
            "remaining": None if a.remaining is None else scale(a.remaining),
            "reset_s": round(a.reset_s, 3) if windowed else None,
            "resets_at": stamp(round(now + a.reset_s)) if windowed else None,
            "tiers": list(a.limit.tiers)}


async def report(gov: Governor, by: str, period: str, ago: int = 0,
                 consumer: str | None = None) -> dict[str, Any]:
    """Spend per `by` over a period, with totals and (given a consumer) its allowances:
    the JSON the admin API answers and `semproxy spend --json` prints."""
    now = gov.clock()
    since, until = period_range(period, now, ago)
    rows = await spend(gov, by, period, ago)
    found: dict[str, Any] = {
        "by": by, "period": period, "ago": ago, "since": stamp(since),
        "until": stamp(min(until, now)) if period == "all" else stamp(until),
        "ledger": ledger_name(gov.plan), "rows": [row_body(r) for r in rows],
        "total": row_body(SpendRow("total", sum(r.requests for r in rows),
                                   sum(r.input for r in rows), sum(r.output for r in rows),
                                   sum(r.cached_input for r in rows),
                                   sum(r.cost for r in rows)))}
    if consumer is not None:
        found["consumer"] = consumer
        found["allowances"] = [allowance_body(a, now) for a in await allowances(gov, consumer)]
    return found


def ledger_name(plan: GovernancePlan) -> str | None:
    """Where the ledger is, for people: `sqlite PATH` or `redis HOST:PORT/DB`."""
    if plan.ledger is None:
        return None
    spec = plan.stores[plan.ledger]
    if spec.kind == "sqlite":
        return f"sqlite {spec.path}"
    if spec.redis is not None:
        return f"redis {spec.redis.host}:{spec.redis.port}/{spec.redis.database}"
    return spec.kind
