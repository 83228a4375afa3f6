"""The Redis store on a real redis-server: shared by processes, kept across a gateway
restart, and a stopped server answered with misses within the deadline."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

import numpy as np
from tests.fakes.redis_server import RedisServer

from semproxy.cache import keys
from semproxy.cache.lookup import Hit, ResponseCache, open_cache
from semproxy.cache.plan import CachePlan, compile_spec, plan
from semproxy.config.cache import AICache

UP = keys.Upstream("gpt", "openai", "https://x/v1/chat/completions", {"model": "m"})
ANSWER = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "42"},
                       "finish_reason": "stop"}]}
V = np.array([0.6, 0.8], dtype=np.float32)


def _conf(port: int) -> AICache:
    return AICache.model_validate({"redis_host": "127.0.0.1", "redis_port": port,
                                   "layers": ["exact", "semantic"], "semantic": {},
                                   "deadline": 200})


def _plan(conf: AICache, text: str) -> CachePlan:
    found = plan(compile_spec("r1", conf, "wordllama"),
                 {"messages": [{"role": "user", "content": text}]}, UP, {}, "alice")
    assert isinstance(found, CachePlan)
    return found


async def test_an_entry_outlives_the_cache_that_wrote_it(redis: RedisServer) -> None:
    conf = _conf(redis.port)
    first = open_cache(conf)
    assert await first.store(_plan(conf, "what is the answer"), ANSWER, V) is None
    await first.aclose()
    second = open_cache(conf)  # a restarted gateway
    found = await second.lookup(_plan(conf, "could you tell me what the answer is"), V)
    await second.aclose()
    assert isinstance(found, Hit) and found.layer == "semantic"


async def test_an_answer_stored_by_another_process_hits_within_a_second(
        redis: RedisServer) -> None:
    script = textwrap.dedent(f"""
        import asyncio, numpy as np
        from tests.cache.test_redis import ANSWER, _conf, _plan
        from semproxy.cache.lookup import open_cache
        async def main():
            conf = _conf({redis.port})
            cache = open_cache(conf)
            assert await cache.store(_plan(conf, "what is the answer"), ANSWER,
                                     np.array([0.6, 0.8], dtype=np.float32)) is None
            await cache.aclose()
        asyncio.run(main())
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    stored = time.monotonic()
    conf = _conf(redis.port)
    cache = open_cache(conf)
    found = None
    while found is None and time.monotonic() - stored < 1.0:
        found = await cache.lookup(_plan(conf, "what is the answer"), V)
    await cache.aclose()
    assert isinstance(found, Hit) and found.layer == "exact"


async def test_a_stopped_server_gives_misses_within_the_deadline(
        redis: RedisServer) -> None:
    conf = _conf(redis.port)
    cache: ResponseCache = open_cache(conf)
    assert await cache.store(_plan(conf, "q"), ANSWER, V) is None
    redis.stop()
    for _ in range(20):
        started = time.monotonic()
        found = await cache.lookup(_plan(conf, "q"), V)
        stored = await cache.store(_plan(conf, "q2"), ANSWER, V)
        assert found is None and stored == "store_fault"
        assert time.monotonic() - started < 0.2 + 0.1  # one deadline, then the breaker is open
    assert cache.backend.faults >= 1
    await cache.aclose()


async def test_purge_by_route_on_redis(redis: RedisServer) -> None:
    conf = _conf(redis.port)
    cache = open_cache(conf)
    await cache.store(_plan(conf, "q"), ANSWER, V)
    assert await cache.backend.purge(keys.purge_pattern("ai-cache", route="r1")) >= 1
    assert await cache.lookup(_plan(conf, "q"), V) is None
    await cache.aclose()
    await asyncio.sleep(0)
