"""The playground's admin endpoints over real HTTP: key, batch eval/calibrate, live feed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from tests.conftest import chat
from tests.server.playground_env import ADMIN_KEY, LABELLED, quickstart_file, start_playground

from semproxy.admin.run import RunningGateway, start
from semproxy.config.loader import load_file
from semproxy.config.source import FileSource

KEY = {"X-API-KEY": ADMIN_KEY}


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    running = await start_playground(tmp_path)
    yield running
    await running.close()


def admin(gw: RunningGateway, path: str) -> str:
    assert gw.admin_url is not None
    return gw.admin_url + path


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/admin/decisions"), ("GET", "/admin/decisions/stream"), ("GET", "/admin/cache/shadow"),
    ("POST", "/admin/routes/auto/eval"), ("POST", "/admin/routes/auto/calibrate"),
])
async def test_data_endpoints_refuse_a_missing_or_wrong_key(
    gw: RunningGateway, http: aiohttp.ClientSession, method: str, path: str
) -> None:
    for headers in ({}, {"X-API-KEY": "wrong"}):
        async with http.request(method, admin(gw, path), data=LABELLED, headers=headers) as resp:
            assert resp.status == 401


async def test_the_page_loads_without_the_key_and_carries_no_data(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async with http.get(admin(gw, "/ui/")) as resp:
        assert resp.status == 200
        assert resp.content_type == "text/html"
        assert "default-src 'self'" in resp.headers["Content-Security-Policy"]
        page = await resp.text()
    assert "routing playground" in page
    assert ADMIN_KEY not in page
    async with http.get(admin(gw, "/ui/app.js")) as resp:
        assert resp.status == 200
        assert "X-API-KEY" in await resp.text()
    async with http.get(admin(gw, "/ui/nothing.js")) as resp:
        assert resp.status in (401, 404)


async def test_the_spend_tab_s_script_is_a_page_file(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async with http.get(admin(gw, "/ui/spend.js")) as resp:
        assert resp.status == 200 and resp.content_type == "text/javascript"
        assert "default-src 'self'" in resp.headers["Content-Security-Policy"]
        assert "/admin/spend/series" in await resp.text()
    async with http.get(admin(gw, "/ui/")) as resp:
        assert '<script src="spend.js" defer></script>' in await resp.text()


async def test_eval_returns_the_confusion_matrix_of_semproxy_eval(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async with http.post(admin(gw, "/admin/routes/auto/eval"), data=LABELLED,
                         headers=KEY) as resp:
        assert resp.status == 200
        body = await resp.json()
    assert body["confusion"] == {"labels": ["code", "translate", "default"],
                                 "counts": [[2, 0, 0], [0, 1, 0], [0, 0, 1]]}
    assert body["accuracy"] == 1.0
    assert body["fallback_rate"] == {"below_threshold": 0.25}
    assert body["misses"] == []


async def test_a_batch_over_the_line_cap_is_refused_with_413(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    lines = '{"prompt": "hello", "instance": null}\n' * 5001
    async with http.post(admin(gw, "/admin/routes/auto/eval"), data=lines, headers=KEY) as resp:
        assert resp.status == 413
        assert "5000" in (await resp.json())["error"]["message"]


@pytest.mark.parametrize(("data", "words"), [
    ('{"prompt": "a", "instance": "code"}\nnot json\n', "line:2"),
    ('{"prompt": "a", "instance": "cod"}\n', "cod"),
    ('{"prompt": "a"}\n', "'instance' is required"),
])
async def test_bad_labelled_data_is_a_400_naming_the_problem(
    gw: RunningGateway, http: aiohttp.ClientSession, data: str, words: str
) -> None:
    async with http.post(admin(gw, "/admin/routes/auto/eval"), data=data, headers=KEY) as resp:
        assert resp.status == 400
        assert words in (await resp.json())["error"]["message"]


@pytest.mark.parametrize("spec", ["vibes", "oos_recall%3D1.5"])
async def test_calibrate_rejects_an_unknown_objective(
    gw: RunningGateway, http: aiohttp.ClientSession, spec: str
) -> None:
    async with http.post(admin(gw, f"/admin/routes/auto/calibrate?objective={spec}"),
                         data=LABELLED, headers=KEY) as resp:
        assert resp.status == 400
        assert "objective" in (await resp.json())["error"]["message"]


async def test_calibrate_takes_an_out_of_scope_recall_objective(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    url = admin(gw, "/admin/routes/auto/calibrate?objective=oos_recall%3D1&folds=2")
    async with http.post(url, data=LABELLED, headers=KEY) as resp:
        assert resp.status == 200, await resp.text()
        body: dict[str, Any] = await resp.json()
    assert body["objective"] == "oos_recall=1"
    # Fitted on every prompt, the one catchall prompt must reach the catchall.
    route = body["route"]["plugins"]["ai-proxy-multi"]["balancer"]
    assert route["threshold"] == body["threshold"] > -1


async def test_calibrate_proposes_a_route_the_admin_put_accepts(
    gw: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    url = admin(gw, "/admin/routes/auto/calibrate?objective=accuracy&folds=2")
    async with http.post(url, data=LABELLED, headers=KEY) as resp:
        assert resp.status == 200
        body: dict[str, Any] = await resp.json()
    threshold = body["threshold"]
    assert [m["name"] for m in body["measured"]] == [
        "before (config)", "threshold (cross-validated)", "+ per-instance (cross-validated)"]
    assert body["folds"] == 2 and body["prompts"] == len(LABELLED.splitlines())
    assert body["measured"][0]["accuracy"]["n"] == body["prompts"]
    assert body["route"]["plugins"]["ai-proxy-multi"]["balancer"]["threshold"] == threshold
    # The download is the operator's own file, comments kept, threshold rewritten.
    config = body["config"]
    assert config["name"] == "quickstart.yaml"
    assert config["text"].startswith("# The embedded default")
    download = yaml.safe_load(config["text"])
    assert download["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]["threshold"] \
        == threshold
    async with http.put(admin(gw, "/admin/routes/auto"), data=orjson.dumps(body["route"]),
                        headers=KEY) as resp:
        assert resp.status == 200, await resp.text()
        assert (await resp.json())["applied"] is True
    assert gw.gateway.config.routes[0].semantic is not None
    assert gw.gateway.config.routes[0].semantic.threshold == threshold


async def test_live_feed_sends_the_buffer_then_each_new_decision(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async with http.post(f"{gw.url}/v1/chat/completions",
                         json=chat("write a python function")) as resp:
        assert resp.status == 200
    async with http.get(admin(gw, "/admin/decisions/stream"), headers=KEY) as stream:
        assert stream.content_type == "text/event-stream"
        first = await read_event(stream)
        async with http.post(f"{gw.url}/v1/chat/completions",
                             json=chat("translate this sentence into french")) as resp:
            assert resp.status == 200
        second = await read_event(stream)
    assert (first["pick"], first["reason"], first["status"]) == ("code", "matched", 200)
    assert (second["seq"], second["pick"]) == (first["seq"] + 1, "translate")
    assert second["top_score"] > 0.5
    assert "prompt" not in second
    async with http.get(admin(gw, "/admin/decisions"), headers=KEY) as resp:
        assert [e["pick"] for e in (await resp.json())["entries"]] == ["code", "translate"]


async def read_event(stream: aiohttp.ClientResponse) -> dict[str, Any]:
    while True:
        line = await asyncio.wait_for(stream.content.readline(), 5)
        if line.startswith(b"data: "):
            event: dict[str, Any] = orjson.loads(line[6:])
            return event


async def test_decisions_carry_the_prompt_only_when_the_route_logs_payloads(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    path = quickstart_file(tmp_path)
    text = path.read_text(encoding="utf-8")
    payloads = "        debug_headers: true\n        logging: {payloads: true}\n"
    path.write_text(text.replace("        debug_headers: true\n", payloads), encoding="utf-8")
    running = await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
    try:
        async with http.post(f"{running.url}/v1/chat/completions",
                             json=chat("write a python function please")) as resp:
            assert resp.status == 200
        async with http.get(admin(running, "/admin/decisions"), headers=KEY) as resp:
            (entry,) = (await resp.json())["entries"]
    finally:
        await running.close()
    assert (entry["pick"], entry["prompt"]) == ("code", "write a python function please")
