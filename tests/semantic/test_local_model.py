"""End to end with the in-process model and the shipped quickstart config."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import yaml
from tests.conftest import GatewayFactory, chat

from .conftest import ask

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"


async def test_quickstart_sends_code_to_code_and_small_talk_to_the_default(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(yaml.safe_load(QUICKSTART.read_text()))
    code = await ask(http, gw, chat("write a python function that reverses a string"))
    weather = await ask(http, gw, chat("what's the weather like in Paris today?"))
    assert (code.status, code.served_by) == (200, "code")
    assert code.headers["X-AI-Semantic-Route"] == "code"
    assert code.body["model"] == "code-model"
    assert (weather.status, weather.served_by) == (200, "default")
    assert weather.headers["X-AI-Semantic-Route"] == "fallback"
    assert weather.headers["X-AI-Semantic-Reason"] == "below_threshold"
    assert weather.body["model"] == "general-model"
    for answer in (code, weather):
        names = [pair.split(":")[0] for pair in answer.headers["X-AI-Semantic-Scores"].split(",")]
        assert sorted(names) == ["code", "translate"]
