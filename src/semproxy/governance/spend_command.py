"""`semproxy spend`: the spend ledger and a consumer's allowance, printed as a table."""

from __future__ import annotations

import asyncio

from semproxy.governance.governor import Governor
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.plan import GovernancePlan
from semproxy.governance.pricing import to_money
from semproxy.governance.spend import allowances, spend


def run_spend(plan: GovernancePlan | None, by: str, period: str, consumer: str | None) -> int:
    if plan is None or plan.ledger is None:
        print("no spend ledger: the config has no limits or prices, or governance.ledger is none")
        return 1
    return asyncio.run(_print(Governor(plan, StoreSet.for_plan(plan)), by, period, consumer))


async def _print(gov: Governor, by: str, period: str, consumer: str | None) -> int:
    try:
        rows = await spend(gov, by, period)
        print(f"{by:<24} {'requests':>9} {'input':>10} {'output':>10} {'cached':>9} {'cost':>12}")
        for r in rows:
            print(f"{r.key or '-':<24} {r.requests:>9} {r.input:>10} {r.output:>10} "
                  f"{r.cached_input:>9} {to_money(r.cost):>12.6f}")
        if consumer is not None:
            for allowance in await allowances(gov, consumer):
                print(allowance.describe())
    finally:
        await gov.stores.close()
    return 0
