"""`semproxy spend`: the spend ledger and a consumer's allowance, as a table or as JSON.

It reads the stores the config names (the SQLite file, Redis) through the
governance API, so it works beside running gateways or without any.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import orjson

from semproxy.governance.governor import Governor
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.plan import GovernancePlan
from semproxy.governance.spend import report
from semproxy.governance.store import StoreError

COLUMNS = ("requests", "input tokens", "output tokens", "cached input", "cost")
NO_LEDGER = "no spend ledger: the config has no limits or prices, or governance.ledger is none"


def run_spend(plan: GovernancePlan | None, by: str, period: str, consumer: str | None,
              ago: int = 0, as_json: bool = False) -> int:
    if plan is None or plan.ledger is None:
        print(NO_LEDGER, file=sys.stderr)
        return 1
    gov = Governor(plan, StoreSet.for_plan(plan))
    try:
        found = asyncio.run(_read(gov, by, period, consumer, ago))
    except StoreError as exc:
        print(f"semproxy spend: cannot read the ledger: {exc}", file=sys.stderr)
        return 2
    print(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode() if as_json else render(found))
    return 0


async def _read(gov: Governor, by: str, period: str, consumer: str | None, ago: int
                ) -> dict[str, Any]:
    try:
        return await report(gov, by, period, ago, consumer)
    finally:
        await gov.stores.close()


def render(found: dict[str, Any]) -> str:
    """The JSON shape as a table for a terminal."""
    when = "all time" if found["period"] == "all" else f"the {found['period']} " \
        f"{_clock(found['since'])} to {_clock(found['until'])} UTC"
    lines = [f"Spend by {found['by']} in {when} (ledger: {found['ledger']})", ""]
    rows = [[r["key"] or "(none)", f"{r['requests']:,}", f"{r['input_tokens']:,}",
             f"{r['output_tokens']:,}", f"{r['cached_input_tokens']:,}", _money(r["cost"])]
            for r in found["rows"]]
    total = found["total"]
    rows.append(["total", f"{total['requests']:,}", f"{total['input_tokens']:,}",
                 f"{total['output_tokens']:,}", f"{total['cached_input_tokens']:,}",
                 _money(total["cost"])])
    lines += _table([found["by"], *COLUMNS], rows)
    if "allowances" in found:
        lines += ["", f"Allowances of consumer {found['consumer']}:"]
        if not found["allowances"]:
            lines.append("  no limit applies")
        lines += [_allowance(a) for a in found["allowances"]]
    return "\n".join(lines)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))])

    rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
    return [line(head), rule, *(line(r) for r in rows[:-1]), rule, line(rows[-1])]


def _clock(iso: str) -> str:
    return iso.replace("T", " ").removesuffix(":00Z")


def _money(amount: float) -> str:
    """Cents always, and finer digits where a request's cost has them: 0.0054, 12.50."""
    text = f"{amount:,.6f}".rstrip("0")
    return text + "0" * (2 - len(text.partition(".")[2]))


def _allowance(a: dict[str, Any]) -> str:
    money = a["unit"] == "money"

    def amount(value: float) -> str:
        return _money(value) if money else f"{int(value):,}"

    unit = "" if money else " " + a["unit"].replace("_", " ")
    where = f"{a['scope']} {a['owner']}"
    if a["route"] is not None and a["scope"] != "route":
        where += f" on route {a['route']}"
    head = f"  {a['limit']} ({where}, {a['window']})"
    if a["used"] is None:
        return f"{head}: limit {amount(a['amount'])}{unit}, counted in each process"
    share = f" ({100 * a['used'] / a['amount']:.1f}%)" if a["amount"] else ""
    reset = f", resets {a['resets_at']}" if a["resets_at"] else ""
    return (f"{head}: {amount(a['used'])} of {amount(a['amount'])}{unit} used{share}, "
            f"{amount(a['remaining'])} left{reset}")

