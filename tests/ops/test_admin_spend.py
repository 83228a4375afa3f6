"""Spend and allowances on the admin API, read from the ledger that the Governor API wrote
(the SQLite file or Redis), not from the request path."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from tests.conftest import route_config
from tests.fakes.redis_server import RedisServer
from tests.governance.plans import Clock

from semproxy.admin.run import RunningGateway, start
from semproxy.config.source import FileSource
from semproxy.governance.governor import Governor, RequestFacts
from semproxy.governance.governor_stores import StoreSet
from semproxy.types import Usage

from .conftest import with_admin
from .test_admin_limits import CONFIG, call

COST_BIG = (1000 * 2.5 + 500 * 10) / 1e6  # Usage(1000, 500) on big: 2.5 in, 10 out per M


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    path = tmp_path / "semproxy.yaml"
    path.write_text(CONFIG.replace("{sqlite}", str(tmp_path / "spend.db")), encoding="utf-8")
    source = FileSource(path, interval_s=0.05)
    running = await start(await source.load(), "127.0.0.1:0", source=source)
    yield running
    await running.close()


async def answered(gw: RunningGateway, who: list[str], at: float | None = None) -> None:
    """Requests answered on `big` with Usage(1000, 500), written by a governor of the
    gateway's own plan, as another worker or replica would write them."""
    plan = gw.gateway.config.governance
    assert plan is not None
    gov = Governor(plan, StoreSet.for_plan(plan), Clock(at or time.time()))
    for consumer in who:
        res = await gov.reserve(RequestFacts("chat", consumer=consumer, input_tokens=1000,
                                             max_tokens=500))
        assert res.refusal is None
        await gov.commit(res, Usage(1000, 500), "big")
    await gov.stores.close()


async def test_spend_by_each_dimension(gw: RunningGateway, http: aiohttp.ClientSession) -> None:
    await answered(gw, ["alice", "alice", "bob"])
    status, body = await call(http, gw, "GET", "/admin/spend?by=consumer&period=month")
    assert status == 200 and body["ledger"].startswith("sqlite ")
    assert [(r["key"], r["requests"], r["output_tokens"]) for r in body["rows"]] == [
        ("alice", 2, 1000), ("bob", 1, 500)]
    assert body["total"]["cost"] == pytest.approx(3 * COST_BIG)
    for by, keys in (("group", {"team-a": 2, "": 1}), ("route", {"chat": 3}),
                     ("instance", {"big": 3})):
        status, body = await call(http, gw, "GET", f"/admin/spend?by={by}&period=day")
        assert status == 200 and {r["key"]: r["requests"] for r in body["rows"]} == keys
    status, body = await call(http, gw, "GET", "/admin/spend?period=month&ago=1")
    assert status == 200 and body["rows"] == [] and body["since"] < body["until"]


async def test_a_series_counts_each_request_once(gw: RunningGateway,
                                                 http: aiohttp.ClientSession) -> None:
    await answered(gw, ["alice", "bob", "bob"])
    await answered(gw, ["alice"], at=time.time() - 3 * 3600)
    status, body = await call(http, gw, "GET", "/admin/spend/series?by=consumer&step=hour"
                                               "&points=6")
    assert status == 200 and len(body["points"]) == 6
    counts = [{r["key"]: r["requests"] for r in p["rows"]} for p in body["points"]]
    assert counts[2] == {"alice": 1} or counts[1] == {"alice": 1}  # an hour may have begun
    assert sum(sum(c.values()) for c in counts) == 4
    assert [p["start"] for p in body["points"]] == sorted(p["start"] for p in body["points"])
    status, body = await call(http, gw, "GET", "/admin/spend/series?step=minute&points=60")
    assert status == 200 and len(body["points"]) == 60


async def test_an_allowance_follows_the_config_and_the_ledger(
        gw: RunningGateway, http: aiohttp.ClientSession) -> None:
    await answered(gw, ["alice", "alice"])
    status, body = await call(http, gw, "GET", "/admin/consumers/alice/allowance")
    assert status == 200 and body["group"] == "team-a"
    [budget] = body["allowances"]
    assert (budget["scope"], budget["owner"], budget["unit"]) == ("consumer_group", "team-a",
                                                                  "money")
    assert budget["used"] == pytest.approx(2 * COST_BIG)
    assert budget["remaining"] == pytest.approx(500 - 2 * COST_BIG)
    assert budget["resets_at"].endswith("01T00:00:00Z")
    assert body["this_month"]["requests"] == 2
    # A limit set over the admin API shows at once: the reader follows the reload.
    tpm = {"limits": [{"name": "per-key-tpm", "scope": "consumer", "total_tokens": 20000,
                       "window": "minute"}]}
    status, _ = await call(http, gw, "PUT", "/admin/routes/chat/ai-rate-limiting", tpm)
    assert status == 200
    await answered(gw, ["alice", "bob"])
    status, body = await call(http, gw, "GET", "/admin/consumers/alice/allowance")
    assert status == 200
    limits = {a["limit"]: a for a in body["allowances"]}
    assert set(limits) == {"per-key-tpm", budget["limit"]}
    tpm_left = limits["per-key-tpm"]
    assert (tpm_left["owner"], tpm_left["route"], tpm_left["used"]) == ("alice", "chat", 1500)
    assert tpm_left["remaining"] == 18500 and 0 < tpm_left["reset_s"] <= 60


@pytest.mark.parametrize(("query", "message"), [
    ("/admin/spend?by=team", "by: must be one of consumer, group, route, instance, end_user"),
    ("/admin/spend?period=year", "period: must be one of minute, hour, day, week, month, all"),
    ("/admin/spend?ago=-1", "ago: must be a whole number from 0 to 1000"),
    ("/admin/spend?ago=" + "9" * 5000, "ago: must be a whole number from 0 to 1000"),
    ("/admin/spend/series?step=all", "step: must be one of minute, hour, day, week, month"),
    ("/admin/spend/series?points=0", "points: must be a whole number from 1 to 400"),
])
async def test_a_bad_query_is_a_400_naming_the_parameter(
        gw: RunningGateway, http: aiohttp.ClientSession, query: str, message: str) -> None:
    status, body = await call(http, gw, "GET", query)
    assert status == 400 and body["error"]["message"] == message


async def test_no_ledger_reads_as_no_spend(http: aiohttp.ClientSession, tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(yaml.safe_dump(with_admin(route_config([{"name": "a", "provider": "echo",
                                                             "weight": 1}]))))
    source = FileSource(path)
    running = await start(await source.load(), "127.0.0.1:0", source=source)
    try:
        status, body = await call(http, running, "GET", "/admin/spend")
        assert status == 200 and body["ledger"] is None and body["rows"] == []
    finally:
        await running.close()


async def test_an_unreachable_ledger_is_a_503_and_reads_again_when_back(
        redis: RedisServer, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    doc: dict[str, Any] = yaml.safe_load(CONFIG.replace("{sqlite}", str(tmp_path / "s.db")))
    doc["governance"] = {"ledger": "redis", "redis": {"port": redis.port},
                         "sqlite_path": str(tmp_path / "s.db")}
    path = tmp_path / "redis.yaml"
    path.write_text(yaml.safe_dump(doc))
    source = FileSource(path)
    running = await start(await source.load(), "127.0.0.1:0", source=source)
    try:
        await answered(running, ["bob"])
        status, body = await call(http, running, "GET", "/admin/spend?by=consumer")
        assert status == 200 and body["ledger"] == f"redis 127.0.0.1:{redis.port}/0"
        assert [r["key"] for r in body["rows"]] == ["bob"]
        redis.stop()
        status, body = await call(http, running, "GET", "/admin/spend")
        assert status == 503 and body["error"]["code"] == "service_unavailable"
        assert body["error"]["message"].startswith("spend store unavailable: redis")
        redis.start()
        status, body = await call(http, running, "GET", "/admin/spend?by=consumer")
        assert status == 200 and [r["requests"] for r in body["rows"]] == [1]
    finally:
        await running.close()

