"""Limits, budgets and prices set over the admin API: keyed, validated with field paths,
written into the config file in place (comments kept), hot reloaded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from semproxy.admin.run import RunningGateway, start
from semproxy.config.source import FileSource
from semproxy.governance.model import Scope, Unit
from semproxy.governance.pricing import Price

from .conftest import ADMIN_KEY

KEY = {"X-API-KEY": ADMIN_KEY}
CONFIG = f"""\
# Platform gateway: one route, two teams.
listen: 127.0.0.1:0
admin: {{listen: 127.0.0.1:0, key: {ADMIN_KEY}}}
routes:
  - id: chat                 # everything OpenAI-shaped
    uri: /v1/*
    plugins:
      ai-proxy-multi:
        instances:
          - name: big        # the dear one
            provider: echo
            weight: 1
            pricing: {{input: 2.5, output: 10}}
          - {{name: small, provider: echo, weight: 1}}
consumers:
  - username: alice          # data science
    group_id: team-a
    plugins:
      key-auth: {{key: alice-key-0123}}
  - username: bob
    plugins:
      key-auth: {{key: bob-key-0123}}
consumer_groups:
  - id: team-a
    plugins:
      ai-rate-limiting:
        limits:
          - {{money: 500, window: month}}   # approved by finance
governance:
  sqlite_path: {{sqlite}}    # keep on a volume
"""


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    path = tmp_path / "semproxy.yaml"
    path.write_text(CONFIG.replace("{sqlite}", str(tmp_path / "spend.db")), encoding="utf-8")
    source = FileSource(path, interval_s=0.05)
    running = await start(await source.load(), "127.0.0.1:0", source=source)
    yield running
    await running.close()


async def call(http: aiohttp.ClientSession, gw: RunningGateway, method: str, path: str,
               body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    async with http.request(method, f"{gw.admin_url}{path}", json=body,
                            headers=KEY if headers is None else headers) as resp:
        return resp.status, await resp.json()


def text_of(gw: RunningGateway, tmp_path: Path) -> str:
    return (tmp_path / "semproxy.yaml").read_text(encoding="utf-8")


COMMENTS = ("# Platform gateway", "# everything OpenAI-shaped", "# the dear one",
            "# data science", "# keep on a volume")
PER_KEY = {"limits": [{"name": "per-key-tpm", "scope": "consumer", "total_tokens": 20000,
                       "window": "minute"}]}


async def test_every_limits_call_needs_the_key(gw: RunningGateway,
                                               http: aiohttp.ClientSession) -> None:
    for method, path in (("GET", "/admin/limits"),
                         ("PUT", "/admin/consumers/alice/ai-rate-limiting"),
                         ("DELETE", "/admin/routes/chat/ai-rate-limiting"),
                         ("PUT", "/admin/consumers/bob/group"),
                         ("PUT", "/admin/consumer_groups/x"),
                         ("PUT", "/admin/routes/chat/instances/big/pricing"),
                         ("GET", "/admin/spend"), ("GET", "/admin/spend/series"),
                         ("GET", "/admin/consumers/alice/allowance")):
        status, body = await call(http, gw, method, path, {}, {"X-API-KEY": "wrong"})
        assert status == 401 and body["error"]["code"] == "invalid_api_key", (method, path)


async def test_a_consumer_limit_is_written_in_place_and_reloaded(
        gw: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    status, body = await call(http, gw, "PUT", "/admin/consumers/bob/ai-rate-limiting",
                              PER_KEY)
    assert status == 200 and body["applied"] and body["in_place"]
    plan = gw.gateway.config.governance
    assert plan is not None
    [limit] = plan.consumers["bob"]
    assert (limit.scope, limit.unit, limit.amount) == (Scope.CONSUMER, Unit.TOTAL_TOKENS, 20000)
    text = text_of(gw, tmp_path)
    assert all(c in text for c in COMMENTS) and "# approved by finance" in text
    assert yaml.safe_load(text)["consumers"][1]["plugins"]["ai-rate-limiting"] == PER_KEY

    status, body = await call(http, gw, "DELETE", "/admin/consumers/bob/ai-rate-limiting")
    assert status == 200 and "bob" not in gw.gateway.config.governance.consumers  # type: ignore[union-attr]
    status, body = await call(http, gw, "DELETE", "/admin/consumers/bob/ai-rate-limiting")
    assert status == 404


@pytest.mark.parametrize(("path", "value", "field"), [
    ("/admin/consumers/alice/ai-rate-limiting", {"limits": [{"money": -5, "window": "month"}]},
     "consumers[0].plugins.ai-rate-limiting.limits[0].money"),
    ("/admin/consumers/alice/ai-rate-limiting",
     {"limits": [{"requests": 5, "window": "fortnight"}]},
     "consumers[0].plugins.ai-rate-limiting.limits[0].window"),
    ("/admin/consumer_groups/team-a/ai-rate-limiting", {"limits": [{"money": 1, "tokens": 5}]},
     "consumer_groups[0].plugins.ai-rate-limiting.limits[0].tokens"),
    # a money budget on a route with an unpriced instance
    ("/admin/routes/chat/ai-rate-limiting", {"limits": [{"money": 50, "window": "day"}]},
     "routes[0].plugins.ai-rate-limiting.limits[0].money"),
    ("/admin/routes/chat/ai-rate-limiting", {"limit": "$http_x_limit", "time_window": 60},
     "routes[0].plugins.ai-rate-limiting.limit"),
    ("/admin/routes/chat/instances/small/pricing", {"input": "cheap", "output": 1},
     "routes[0].plugins.ai-proxy-multi.instances[1].pricing.input"),
    ("/admin/routes/chat/instances/small/pricing", {"input": 1, "output": 1e9},
     "routes[0].plugins.ai-proxy-multi.instances[1].pricing.output"),
])
async def test_a_bad_value_is_refused_with_its_field_path_and_nothing_changes(
        gw: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path,
        path: str, value: dict[str, Any], field: str) -> None:
    before, version = text_of(gw, tmp_path), gw.gateway.config.version
    status, body = await call(http, gw, "PUT", path, value)
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    assert any(e.startswith(field) for e in body["error"]["errors"]), body["error"]["errors"]
    assert text_of(gw, tmp_path) == before and gw.gateway.config.version == version


async def test_group_membership_and_groups(gw: RunningGateway, http: aiohttp.ClientSession,
                                           tmp_path: Path) -> None:
    status, body = await call(http, gw, "PUT", "/admin/consumers/bob/group",
                              {"group_id": "team-b"})
    assert status == 400 and body["error"]["errors"] == [
        "consumers[1].group_id: no consumer group 'team-b'"]
    budget = {"limits": [{"name": "team-b-monthly", "money": 100, "window": "month"}]}
    status, _ = await call(http, gw, "PUT", "/admin/consumer_groups/team-b",
                           {"desc": "search", "plugins": {"ai-rate-limiting": budget}})
    assert status == 200
    status, _ = await call(http, gw, "PUT", "/admin/consumers/bob/group", {"group_id": "team-b"})
    assert status == 200
    plan = gw.gateway.config.governance
    assert plan is not None and plan.group_of["bob"] == "team-b"
    assert [x.label for x in plan.groups["team-b"]] == ["team-b-monthly"]
    status, body = await call(http, gw, "DELETE", "/admin/consumer_groups/team-b")
    assert status == 400  # bob is still in it
    assert body["error"]["errors"] == ["consumers[1].group_id: no consumer group 'team-b'"]
    status, _ = await call(http, gw, "PUT", "/admin/consumers/bob/group", {"group_id": None})
    assert status == 200
    assert (await call(http, gw, "DELETE", "/admin/consumer_groups/team-b"))[0] == 200
    doc = yaml.safe_load(text_of(gw, tmp_path))
    assert [g["id"] for g in doc["consumer_groups"]] == ["team-a"]
    assert "group_id" not in doc["consumers"][1]
    assert all(c in text_of(gw, tmp_path) for c in COMMENTS)


async def test_route_limits_and_instance_prices(gw: RunningGateway,
                                                http: aiohttp.ClientSession) -> None:
    apisix = {"limit": 5000, "time_window": 60, "limit_strategy": "total_tokens",
              "instances": [{"name": "big", "limit": 1000, "time_window": 60}],
              "rejected_code": 429}
    assert (await call(http, gw, "PUT", "/admin/routes/chat/ai-rate-limiting", apisix))[0] == 200
    policy = gw.gateway.config.governance.policy("chat")  # type: ignore[union-attr]
    assert policy is not None
    assert {lim.amount for lim in policy.instances["big"]} == {1000}
    assert {lim.amount for lim in policy.instances["small"]} == {5000}
    status, _ = await call(http, gw, "PUT", "/admin/routes/chat/instances/small/pricing",
                           {"input": 0.15, "output": 0.6})
    assert status == 200
    policy = gw.gateway.config.governance.policy("chat")  # type: ignore[union-attr]
    assert policy is not None and policy.prices["small"] == Price.per_million(0.15, 0.6)
    status, shown = await call(http, gw, "GET", "/admin/limits")
    assert status == 200
    [route] = shown["routes"]
    assert route["ai-rate-limiting"] == apisix
    assert route["pricing"]["small"] == {"input": 0.15, "output": 0.6}
    assert shown["consumers"][0] == {"username": "alice", "group_id": "team-a",
                                     "ai-rate-limiting": None}
    assert (await call(http, gw, "DELETE", "/admin/routes/chat/instances/big/pricing"))[0] == 200
    policy = gw.gateway.config.governance.policy("chat")  # type: ignore[union-attr]
    assert policy is not None and "big" not in policy.prices


@pytest.mark.parametrize(("method", "path", "body", "status"), [
    ("PUT", "/admin/consumers/carol/ai-rate-limiting", PER_KEY, 404),
    ("PUT", "/admin/routes/nope/ai-rate-limiting", PER_KEY, 404),
    ("PUT", "/admin/routes/chat/instances/nope/pricing", {"input": 1, "output": 1}, 404),
    ("DELETE", "/admin/consumer_groups/nope", None, 404),
    ("GET", "/admin/consumers/carol/allowance", None, 404),
    ("PUT", "/admin/consumers/alice/ai-rate-limiting", [1, 2], 400),
    ("PUT", "/admin/consumers/alice/group", {"group": "team-a"}, 400),
    ("PUT", "/admin/consumer_groups/team-c", {"id": "other"}, 400),
    ("PUT", "/admin/consumer_groups/team-c", {"members": ["bob"]}, 400),
    # the environment is filled in only in credentials when sent over the admin API
    ("PUT", "/admin/consumers/alice/ai-rate-limiting",
     {"limits": [{"name": "${HOME}", "requests": 1, "window": 60}]}, 400),
])
async def test_what_cannot_be_written_is_a_clear_error(
        gw: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path, method: str,
        path: str, body: Any, status: int) -> None:
    before = text_of(gw, tmp_path)
    got, answer = await call(http, gw, method, path, body)
    assert got == status and answer["error"]["message"]
    assert text_of(gw, tmp_path) == before


async def test_removing_the_only_key_of_a_block_keeps_the_files_comments(
        gw: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    # The group's plugin is the only key under `plugins`: the block is left empty ({}),
    # and the rest of the file, comments included, stays as the operator wrote it.
    status, body = await call(http, gw, "DELETE",
                              "/admin/consumer_groups/team-a/ai-rate-limiting")
    assert status == 200 and body["applied"] and body["in_place"]
    plan = gw.gateway.config.governance
    assert plan is not None and "team-a" not in plan.groups
    text = text_of(gw, tmp_path)
    assert yaml.safe_load(text)["consumer_groups"] == [{"id": "team-a", "plugins": {}}]
    assert all(c in text for c in COMMENTS)


async def test_a_redis_password_is_never_shown_and_round_trips(
        gw: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    plugin = {"policy": "redis", "redis_host": "127.0.0.1", "redis_password": "s3cret-pass",
              "limits": [{"scope": "consumer", "requests": 5, "window": "minute"}]}
    assert (await call(http, gw, "PUT", "/admin/routes/chat/ai-rate-limiting", plugin))[0] == 200
    status, shown = await call(http, gw, "GET", "/admin/limits")
    assert status == 200 and "s3cret-pass" not in str(shown)
    sent_back = shown["routes"][0]["ai-rate-limiting"]
    assert sent_back["redis_password"] == "******"
    sent_back["limits"][0]["requests"] = 6
    assert (await call(http, gw, "PUT", "/admin/routes/chat/ai-rate-limiting", sent_back))[0] \
        == 200
    stored = yaml.safe_load(text_of(gw, tmp_path))["routes"][0]["plugins"]["ai-rate-limiting"]
    assert stored["redis_password"] == "s3cret-pass" and stored["limits"][0]["requests"] == 6
    status, body = await call(http, gw, "PUT", "/admin/consumers/bob/ai-rate-limiting",
                              {"redis_password": "******", "limits": []})
    assert status == 400 and body["error"]["errors"] == [
        "consumers[username=bob].plugins.ai-rate-limiting.redis_password: ****** stands for "
        "a stored password, but there is none here; give the value"]
