"""Config documents for the governed request path (limits, budgets, prices) in the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from semproxy.admin.run import RunningGateway

KEY = "alice-key-0123"
BOB = "bob-key-45678"
AUTH = {"Authorization": f"Bearer {KEY}"}
PRICE = {"input": 2.0, "output": 8.0}  # per million tokens: 2,000 and 8,000 nanos a token
CHEAP = {"input": 0.5, "output": 1.0}


def echo(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "provider": "echo", "weight": 1, "options": {"model": name},
            **fields}


def upstream(name: str, url: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "provider": "openai-compatible", "weight": 1,
            "options": {"model": name}, "override": {"endpoint": url}, **fields}


def governed(tmp: Path, instances: list[dict[str, Any]], limiting: dict[str, Any] | None = None,
             consumer_limits: list[dict[str, Any]] | None = None, key_auth: bool = True,
             groups: list[dict[str, Any]] | None = None, **multi: Any) -> dict[str, Any]:
    """One `/v1/*` route over `instances`, consumers alice (with `consumer_limits`, in group
    `team` when `groups` are given) and bob, the SQLite file under `tmp`."""
    plugins: dict[str, Any] = {"ai-proxy-multi": {"instances": instances, **multi}}
    if key_auth:
        plugins["key-auth"] = {}
    if limiting is not None:
        plugins["ai-rate-limiting"] = limiting
    alice: dict[str, Any] = {"username": "alice", "plugins": {"key-auth": {"key": KEY}}}
    if consumer_limits is not None:
        alice["plugins"]["ai-rate-limiting"] = {"limits": consumer_limits}
    if groups is not None:
        alice["group_id"] = groups[0]["id"]
    doc: dict[str, Any] = {
        "listen": "127.0.0.1:0",
        "governance": {"sqlite_path": str(tmp / "spend.db")},
        "routes": [{"id": "r", "uri": "/v1/*", "plugins": plugins}],
        "consumers": [alice, {"username": "bob", "plugins": {"key-auth": {"key": BOB}}}],
    }
    if groups is not None:
        doc["consumer_groups"] = groups
    return doc


def chat(text: str = "hello there", **extra: Any) -> dict[str, Any]:
    return {"model": "auto", "messages": [{"role": "user", "content": text}], **extra}


async def post(http: aiohttp.ClientSession, gw: RunningGateway, body: dict[str, Any],
               path: str = "/v1/chat/completions", headers: dict[str, str] | None = None
               ) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Status, headers and JSON body of one request as alice (unless headers say else)."""
    async with http.post(gw.url + path, json=body, headers=headers or AUTH) as resp:
        return resp.status, dict(resp.headers), await resp.json(content_type=None)


async def committed(gw: RunningGateway, label: str, value: str) -> int:
    """What a limit's counter holds now (use and holds), read through the gateway's stores."""
    governed = gw.gateway.governance.current
    assert governed is not None
    gov = governed.governor
    limit = next(x for x in _limits(gov.plan) if x.label == label)
    now = gov.clock()
    slots = limit.window.slots(now)
    reads = [f"{limit.id}|{value}|{b}" for b in slots.reads]
    return await gov.stores.get(limit.store).used(reads, now)


def _limits(plan: Any) -> list[Any]:
    out = [x for p in plan.routes.values() for x in p.admit]
    out += [x for p in plan.routes.values() for xs in p.instances.values() for x in xs]
    out += [x for xs in plan.consumers.values() for x in xs]
    return out + [x for xs in plan.groups.values() for x in xs]
