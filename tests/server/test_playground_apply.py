"""Apply from the playground: thresholds written into the config file in place, so the
operator's comments, order and `${VAR}` references survive (as Download keeps them)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from tests.server.playground_env import ADMIN_KEY, LABELLED, start_playground

from semproxy.admin.run import RunningGateway

KEY = {"X-API-KEY": ADMIN_KEY}


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    running = await start_playground(tmp_path)
    yield running
    await running.close()


async def post(gw: RunningGateway, path: str, data: bytes | str) -> tuple[int, Any]:
    assert gw.admin_url is not None
    async with aiohttp.ClientSession() as http, \
            http.post(gw.admin_url + path, data=data, headers=KEY) as resp:
        return resp.status, await resp.json()


async def test_calibrate_says_a_file_config_is_applied_in_place(gw: RunningGateway) -> None:
    status, body = await post(gw, "/admin/routes/auto/calibrate?holdout=0", LABELLED)
    assert status == 200 and body["in_place"] is True


async def test_apply_rewrites_only_the_thresholds_and_keeps_comments(
    gw: RunningGateway, tmp_path: Path
) -> None:
    path = tmp_path / "quickstart.yaml"
    before = path.read_text()
    status, body = await post(gw, "/admin/routes/auto/thresholds", orjson.dumps(
        {"threshold": 0.42, "per_instance": {"translate": 0.37}}))
    assert status == 200, body
    assert body["applied"] is True
    after = path.read_text()
    comments = [line for line in before.splitlines() if line.lstrip().startswith("#")]
    assert comments and all(line in after.splitlines() for line in comments)
    assert len(after.splitlines()) == len(before.splitlines()) + 1  # the new instance key
    plugin = yaml.safe_load(after)["routes"][0]["plugins"]["ai-proxy-multi"]
    assert plugin["balancer"]["threshold"] == 0.42
    assert [i.get("threshold") for i in plugin["instances"]] == [None, 0.37, None]
    semantic = gw.gateway.config.routes[0].semantic
    assert semantic is not None and semantic.threshold == 0.42


@pytest.mark.parametrize("payload", [{"threshold": "high"}, {"threshold": 2},
                                     {"threshold": 0.3, "per_instance": {"code": None}},
                                     {"threshold": 0.3, "per_instance": {"nope": 0.5}}])
async def test_a_bad_threshold_is_refused_and_the_file_is_untouched(
    gw: RunningGateway, tmp_path: Path, payload: dict[str, Any]
) -> None:
    before = (tmp_path / "quickstart.yaml").read_text()
    status, body = await post(gw, "/admin/routes/auto/thresholds", orjson.dumps(payload))
    assert status == 400, body
    assert (tmp_path / "quickstart.yaml").read_text() == before


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page", ["src/semproxy/admin/ui/index.html", "docs/en/playground.md",
                                  "docs/zh/playground.md"])
def test_the_live_tab_hint_and_the_docs_say_when_prompts_are_shown(page: str) -> None:
    # The feed carries the prompt for routes with logging.payloads on
    # (test_decisions_carry_the_prompt_only_when_the_route_logs_payloads).
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "logging.payloads" in text
    assert "never recorded" not in text and "Prompts are\n    not shown" not in text
