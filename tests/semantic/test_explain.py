"""`semproxy explain`: the decision a request would get, from the command line."""

from __future__ import annotations

import asyncio
import copy
import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml
from tests.conftest import GatewayFactory, chat, instance
from tests.fakes import FakeEmbeddings

from semproxy.semantic.query import MAX_ROUTING_TEXT

from .conftest import ask, remote_embeddings, semantic_config

ROOT = Path(__file__).resolve().parents[2]

CONFIG: dict[str, Any] = {
    "listen": "127.0.0.1:0",
    "routes": [{"id": "auto", "uri": "/v1/chat/completions", "plugins": {"ai-proxy-multi": {
        "balancer": {"algorithm": "semantic", "threshold": 0.5, "expose_scores": True},
        "embeddings": {"provider": "local"},
        "instances": [
            instance("code", examples=["write a python function", "debug this stack trace",
                                       "fix the bug in my code", "write a sql query"]),
            instance("translate", examples=["translate this sentence into french",
                                            "how do you say hello in spanish"],
                     threshold=0.45),
            instance("default", catchall=True),
        ]}}}],
}

PROMPTS = ["write a python function that sorts a list",
           "translate good morning into french",
           "what's the weather like in Paris today?"]


async def explain(config: Path, prompt: str, *flags: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "semproxy", "--log-level", "ERROR", "explain",
        "--config", str(config), "--route", "auto", *flags, prompt,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"})
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def write_config(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "semproxy.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def test_explain_prints_every_score_threshold_the_pick_and_the_reason(
    tmp_path: Path
) -> None:
    path = write_config(tmp_path, CONFIG)
    code, weather = await asyncio.gather(explain(path, PROMPTS[0]), explain(path, PROMPTS[2]))
    lines = code.splitlines()
    assert lines[0] == "route auto: pick code (matched)"
    assert lines[1].startswith(" * code ") and lines[1].endswith("threshold 0.50")
    assert lines[2].startswith("   translate ") and lines[2].endswith("threshold 0.45")
    assert "catchall: default" in lines
    assert float(lines[1].split()[2]) > 0.5 > float(lines[2].split()[1])
    assert weather.splitlines()[0] == "route auto: pick default (below_threshold)"
    assert " code " in weather and " translate " in weather


async def test_explain_prints_thresholds_with_every_decimal_they_have(tmp_path: Path) -> None:
    config = copy.deepcopy(CONFIG)
    multi = config["routes"][0]["plugins"]["ai-proxy-multi"]
    multi["balancer"]["threshold"] = 0.137852  # as `threshold: auto` learns them
    multi["instances"][1]["threshold"] = 0.4567  # as `calibrate` writes them
    lines = (await explain(write_config(tmp_path, config), PROMPTS[0])).splitlines()
    assert lines[1].endswith("threshold 0.137852") and lines[2].endswith("threshold 0.4567")


async def test_explain_json_picks_what_the_gateway_picks(
    tmp_path: Path, gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    path = write_config(tmp_path, CONFIG)
    explained = await asyncio.gather(*(explain(path, p, "--json") for p in PROMPTS))
    gw = await gateway(yaml.safe_load(path.read_text()))
    for prompt, text in zip(PROMPTS, explained, strict=True):
        result = orjson.loads(text)
        answer = await ask(http, gw, chat(prompt))
        assert result["pick"] == answer.served_by, prompt
        scores = ",".join(f"{s['instance']}:{s['score']:.4f}" for s in result["scores"])
        assert scores == answer.headers["X-AI-Semantic-Scores"], prompt
        assert {s["instance"]: s["threshold"] for s in result["scores"]} == \
            {"code": 0.5, "translate": 0.45}
    picks = [orjson.loads(t)["pick"] for t in explained]
    assert picks == ["code", "translate", "default"]


async def test_explain_embeds_the_same_capped_text_as_the_gateway(
    tmp_path: Path, gateway: GatewayFactory, http: aiohttp.ClientSession,
    embed: FakeEmbeddings,
) -> None:
    config = semantic_config(remote_embeddings(embed.url))
    config["routes"][0]["id"] = "auto"
    path = write_config(tmp_path, config)
    prompt = "python code " + "y" * 40_000
    result = orjson.loads(await explain(path, prompt, "--json"))
    explained = embed.inputs_seen[-1]
    gw = await gateway(config)
    answer = await ask(http, gw, chat(prompt))
    assert explained == embed.inputs_seen[-1]
    assert len(explained) <= MAX_ROUTING_TEXT
    assert result["pick"] == answer.served_by == "code"
