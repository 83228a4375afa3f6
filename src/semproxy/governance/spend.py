"""Reading spend: what was spent (the ledger) and what is left (the limits' counters).

For the admin API, the playground and `semproxy spend`; nothing here is on the
request path. Periods are UTC: `day` and `month` are the current calendar ones.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, datetime

from semproxy.governance.governor import Governor
from semproxy.governance.model import Limit, Unit
from semproxy.governance.pricing import to_money
from semproxy.governance.store import SpendRow

PERIODS = ("day", "month", "all")


@dataclass(frozen=True, slots=True)
class Allowance:
    """One limit of a consumer: how much of it is used (or held) and how much is left."""

    limit: Limit
    used: int
    remaining: int
    reset_s: float

    def describe(self) -> str:
        show = to_money if self.limit.unit is Unit.MONEY else int
        return (f"{self.limit.label}: {show(self.used)} of {show(self.limit.amount)} "
                f"{self.limit.unit.value} used, {show(self.remaining)} left "
                f"({self.limit.window.describe()}, resets in {self.reset_s:.0f} s)")


def period_range(period: str, now: float) -> tuple[float, float]:
    if period == "all":
        return 0.0, now + 1
    moment = datetime.fromtimestamp(now, UTC)
    if period == "day":
        start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        return start.timestamp(), start.timestamp() + 86400
    if period == "month":
        start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        days = calendar.monthrange(moment.year, moment.month)[1]
        return start.timestamp(), start.timestamp() + days * 86400
    raise ValueError(f"period must be one of {', '.join(PERIODS)}")


async def spend(gov: Governor, dimension: str, period: str) -> list[SpendRow]:
    """Spend per consumer, group, route, instance or end user over a period."""
    ledger = gov.plan.ledger
    if ledger is None:
        return []
    since, until = period_range(period, gov.clock())
    store = gov.stores.get(ledger)
    return await store.spend(dimension, since, until)


async def allowances(gov: Governor, consumer: str) -> list[Allowance]:
    """The consumer's own and its group's limits: used and remaining now."""
    plan, now = gov.plan, gov.clock()
    group = plan.group_of.get(consumer)
    owned = [(limit, consumer) for limit in plan.consumers.get(consumer, ())]
    owned += [(limit, group) for limit in plan.groups.get(group or "", ()) if group]
    out = []
    for limit, owner in owned:
        slots = limit.window.slots(now)
        used = await gov.stores.get(limit.store).used(
            [f"{limit.id}|{owner}|{b}" for b in slots.reads], now)
        out.append(Allowance(limit, used, max(limit.amount - used, 0), slots.reset_s))
    return out
