"""Spend and allowances on the admin API: read from the ledger, never from the request path.

    GET /admin/spend?by=consumer&period=month&ago=0
    GET /admin/spend/series?by=route&step=hour&points=24
    GET /admin/consumers/{username}/allowance

The reader keeps its own `Governor` over the live config's governance plan and
reads the stores that plan names (the SQLite file, Redis) through the
governance API (governance/spend.py), so it answers the same with governance
wired into the request path or not, and sees every worker's and replica's
spend, not only this process's. A new config version gets a new governor;
stores whose spec did not change are kept open across it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from semproxy.errors import BadRequestError, NotFoundError, UnavailableError
from semproxy.governance.governor import Governor
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.periods import PERIODS
from semproxy.governance.plan import GovernancePlan
from semproxy.governance.spend import ledger_name, report, row_body, series, stamp
from semproxy.governance.store import DIMENSIONS, StoreError
from semproxy.server.app import Gateway, json_response

STEPS = tuple(p for p in PERIODS if p != "all")
MAX_POINTS = 400
MAX_AGO = 1000
_EMPTY = GovernancePlan({}, {}, {}, {}, {}, None)


class SpendReader:
    """The admin's governor over the live plan, rebuilt when the plan changes."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._gov: Governor | None = None
        self._lock = asyncio.Lock()

    async def governor(self) -> Governor:
        plan = self.gateway.config.governance or _EMPTY
        async with self._lock:
            gov = self._gov
            if gov is None or gov.plan is not plan:
                stores = StoreSet.for_plan(plan, gov.stores if gov else None)
                if gov is not None:
                    await gov.stores.close(keep=stores)
                gov = self._gov = Governor(plan, stores)
            return gov

    async def close(self) -> None:
        async with self._lock:
            if self._gov is not None:
                await self._gov.stores.close()
                self._gov = None


class SpendAPI:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.reader = SpendReader(gateway)

    def mount(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/admin/spend", self.get_spend)
        r.add_get("/admin/spend/series", self.get_series)
        r.add_get("/admin/consumers/{username}/allowance", self.get_allowance)
        app.on_cleanup.append(self._close)

    async def _close(self, app: web.Application) -> None:
        await self.reader.close()

    async def get_spend(self, request: web.Request) -> web.Response:
        q = request.query
        by = choice(q, "by", DIMENSIONS, "consumer")
        period = choice(q, "period", PERIODS, "month")
        ago = number(q, "ago", 0, 0, MAX_AGO)
        gov = await self.reader.governor()
        return json_response(await read(report(gov, by, period, ago)))

    async def get_series(self, request: web.Request) -> web.Response:
        q = request.query
        by = choice(q, "by", DIMENSIONS, "consumer")
        step = choice(q, "step", STEPS, "hour")
        points = number(q, "points", 24, 1, MAX_POINTS)
        gov = await self.reader.governor()
        found = await read(series(gov, by, step, points))
        return json_response({
            "by": by, "step": step, "ledger": ledger_name(gov.plan),
            "points": [{"start": stamp(b.start), "end": stamp(b.end),
                        "rows": [row_body(r) for r in b.rows]} for b in found]})

    async def get_allowance(self, request: web.Request) -> web.Response:
        username = request.match_info["username"]
        if username not in {c.get("username") for c in consumers(self.gateway)}:
            raise NotFoundError(f"no consumer {username!r}")
        gov = await self.reader.governor()
        found = await read(report(gov, "consumer", "month", 0, username))
        mine = [r for r in found["rows"] if r["key"] == username]
        return json_response({
            "consumer": username, "group": gov.plan.group_of.get(username),
            "ledger": found["ledger"], "this_month": mine[0] if mine else None,
            "allowances": found["allowances"]})


def consumers(gateway: Gateway) -> list[dict[str, Any]]:
    """The consumers of the live config's document (as written)."""
    found = gateway.config.document.get("consumers") or []
    return [c for c in found if isinstance(c, dict)]


async def read(pending: Any) -> Any:
    """Await a store read; a store that cannot answer is a 503 naming it."""
    try:
        return await pending
    except StoreError as exc:
        raise UnavailableError(f"spend store unavailable: {exc}") from exc


def choice(query: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = query.get(name, default)
    if value not in allowed:
        raise BadRequestError(f"{name}: must be one of {', '.join(allowed)}")
    return value


def number(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    if not (text.isdigit() and len(text) <= 9 and low <= int(text) <= high):
        raise BadRequestError(f"{name}: must be a whole number from {low} to {high}")
    return int(text)
