"""`semproxy explain` on a route with a response cache says what the cache would do; with
Redis it sees the entries a running gateway stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes import FakeLLM
from tests.fakes.redis_server import RedisServer
from tests.server.cache_env import ask, settled

from .conftest import run_cli


def cached(cache: dict[str, Any], uri: str = "/v1/*") -> dict[str, Any]:
    config = route_config([instance("echo")], uri=uri)
    config["routes"][0]["plugins"]["ai-cache"] = cache
    return config


def test_explain_on_a_round_robin_route_with_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "semproxy.yaml"
    path.write_text(yaml.safe_dump(cached({"layers": ["exact", "semantic"]})))
    done = run_cli("explain", "--config", str(path), "--route", "r1", "what is the answer")
    assert done.returncode == 0, done.stderr
    assert "cache (on, memory store, layers exact+semantic) on instance echo: MISS" \
        in done.stdout
    assert "cosine 0.53 on wordllama vectors" in done.stdout
    assert "not visible here" in done.stdout  # an in-process store lives in the gateway


async def test_explain_sees_what_a_gateway_stored_in_redis(
        tmp_path: Path, gateway: GatewayFactory, http: aiohttp.ClientSession,
        redis: RedisServer) -> None:
    async with FakeLLM("up") as up:
        config = route_config([instance("a", up.url)], uri="/v1/*")
        config["routes"][0]["plugins"]["ai-cache"] = {
            "layers": ["exact", "semantic"], "redis_host": "127.0.0.1",
            "redis_port": redis.port}
        gw = await gateway(config)
        await ask(http, gw, "chat", "what is the capital of chile")
        await settled(gw)
        path = tmp_path / "semproxy.yaml"
        path.write_text(yaml.safe_dump(config))
        done = run_cli("explain", "--json", "--config", str(path), "--route", "r1",
                       "tell me the capital of chile")
    assert done.returncode == 0, done.stderr
    verdict = orjson.loads(done.stdout)["cache"]
    assert verdict["status"] == "HIT-L2" and verdict["store"] == "redis"
    assert verdict["similarity"] > 0.53 and "note" not in verdict
