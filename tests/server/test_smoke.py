"""End-to-end smoke: the quickstart config answers on a real socket."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import yaml
from tests.conftest import GatewayFactory, chat

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"


async def test_quickstart_routes_a_coding_prompt_to_the_code_instance(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(yaml.safe_load(QUICKSTART.read_text()))
    async with http.post(f"{gw.url}/v1/chat/completions",
                         json=chat("write a python function that sorts a list")) as resp:
        assert resp.status == 200
        body = await resp.json()
        assert resp.headers["X-AI-Semantic-Route"] == "code"
    assert body["choices"][0]["message"]["content"].startswith("[code] ")
    assert body["model"] == "code-model"


async def test_healthz_answers_ok_once_loaded(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(yaml.safe_load(QUICKSTART.read_text()))
    async with http.get(f"{gw.url}/healthz") as resp:
        assert resp.status == 200
        assert (await resp.json())["status"] == "ok"
