"""POST /admin/routes/{id}/examples: keyed, validated, persisted and live at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from tests.server.playground_env import ADMIN_KEY, start_playground

from semproxy.admin.run import RunningGateway

KEY = {"X-API-KEY": ADMIN_KEY}
NEW = "tune my bicycle gears before the race"


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    running = await start_playground(tmp_path)
    yield running
    await running.close()


async def post(http: aiohttp.ClientSession, gw: RunningGateway, body: Any,
               route: str = "auto", headers: dict[str, str] | None = None
               ) -> tuple[int, dict[str, Any]]:
    assert gw.admin_url is not None
    async with http.post(f"{gw.admin_url}/admin/routes/{route}/examples", json=body,
                         headers=KEY if headers is None else headers) as resp:
        return resp.status, await resp.json()


async def pick(http: aiohttp.ClientSession, gw: RunningGateway, prompt: str) -> str:
    assert gw.admin_url is not None
    async with http.post(f"{gw.admin_url}/admin/routes/auto/explain", json={"prompt": prompt},
                         headers=KEY) as resp:
        body: dict[str, Any] = await resp.json()
        return str(body["pick"])


async def test_an_added_example_is_saved_and_routes_its_prompt_at_once(
    gw: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    assert await pick(http, gw, NEW) == "default"  # nothing like it on the route yet
    had = len(gw.gateway.config.routes[0].instances[0].examples)
    status, body = await post(http, gw, {"instance": "code", "examples": [NEW]})
    assert status == 200, body
    assert body["added"] == [NEW] and body["examples"] == had + 1 and body["applied"] is True
    assert await pick(http, gw, NEW) == "code"
    text = (tmp_path / "quickstart.yaml").read_text()
    code = yaml.safe_load(text)["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]
    assert code["examples"][-1] == NEW
    assert text.startswith("# The embedded default")  # edited in place: comments kept
    # The same example again is not doubled, and nothing is written.
    status, body = await post(http, gw, {"instance": "code", "examples": [f"  {NEW} "]})
    assert status == 200 and body["added"] == [] and body["examples"] == had + 1


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"instance": "nope", "examples": ["x"]}, 400, "no instance 'nope'"),
    ({"instance": "code", "examples": []}, 400, "non-empty list"),
    ({"instance": "code", "examples": ["ok", "  "]}, 400, "blank"),
    ({"instance": "code", "examples": "just a string"}, 400, "non-empty list"),
    ({"examples": ["x"]}, 400, "'instance'"),
    ({"instance": "code", "examples": ["x" * 2001]}, 400, "2000 characters"),
    ({"instance": "code", "examples": [f"example {i}" for i in range(64)]}, 400,
     "instances[0].examples"),
])
async def test_bad_requests_are_refused_in_words_and_change_nothing(
    gw: RunningGateway, http: aiohttp.ClientSession, body: Any, status: int, words: str
) -> None:
    version = gw.gateway.table.version
    got, answer = await post(http, gw, body)
    assert got == status and words in answer["error"]["message"], answer
    assert gw.gateway.table.version == version


async def test_unknown_route_is_404_and_the_key_is_required(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    status, answer = await post(http, gw, {"instance": "code", "examples": ["x"]}, route="nope")
    assert status == 404
    status, answer = await post(http, gw, {"instance": "code", "examples": ["x"]}, headers={})
    assert status == 401 and answer["error"]["code"] == "invalid_api_key"
