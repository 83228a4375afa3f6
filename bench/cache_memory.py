"""Bytes of memory per response-cache entry, in process and in Redis.

    .venv/bin/python bench/cache_memory.py [--redis-port PORT]

Stores N entries of a typical answer (a 600-character reply, its usage, a
256-dimension vector and a 60-character prompt) through `ResponseCache` into the
in-process store and reports what tracemalloc sees per entry against what the
store counts; with --redis-port, the same into that redis-server and
`MEMORY USAGE` of one entry and of its partition item.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tracemalloc

import numpy as np

from semproxy.cache import keys
from semproxy.cache.failopen import FailOpenStore
from semproxy.cache.lookup import ResponseCache, open_cache
from semproxy.cache.memory import MemoryStore
from semproxy.cache.plan import CachePlan, compile_spec, plan
from semproxy.config.cache import AICache

N = 2000
UP = keys.Upstream("gpt", "openai", "https://api.openai.com/v1/chat/completions",
                   {"model": "gpt-4o-mini"})
ANSWER = {"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "x" * 600}}],
          "usage": {"prompt_tokens": 20, "completion_tokens": 150, "total_tokens": 170}}


def _plan(conf: AICache, i: int) -> CachePlan:
    found = plan(compile_spec("r1", conf, "wordllama"),
                 {"messages": [{"role": "user", "content": f"question number {i} " + "y" * 40}]},
                 UP, {}, "alice")
    assert isinstance(found, CachePlan)
    return found


async def _fill(cache: ResponseCache, conf: AICache) -> None:
    rng = np.random.default_rng(0)
    for i in range(N):
        await cache.store(_plan(conf, i), ANSWER, rng.standard_normal(256).astype(np.float32))


async def in_process() -> None:
    conf = AICache.model_validate({"layers": ["exact", "semantic"], "semantic": {
        "max_entries": N}})
    store = MemoryStore(1 << 30)
    cache = ResponseCache(FailOpenStore(store))
    await cache.store(_plan(conf, -1), ANSWER, None)  # imports and first-use tables
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    await _fill(cache, conf)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"in process: {(after - before) / N:.0f} bytes per entry measured, "
          f"{store.bytes / N:.0f} counted by the store (body {len(str(ANSWER))} chars)")


async def in_redis(port: int) -> None:
    conf = AICache.model_validate({"redis_host": "127.0.0.1", "redis_port": port,
                                   "layers": ["exact", "semantic"],
                                   "semantic": {"max_entries": N}})
    cache = open_cache(conf)
    await _fill(cache, conf)
    client = cache.backend.inner._redis  # a measurement reaching in, not an API
    one = _plan(conf, 0)
    entry = await client.memory_usage(one.exact)
    partition = await client.memory_usage(one.partition or "")
    print(f"redis: {entry} bytes per entry, {partition / N:.0f} per partition item "
          f"({N} items)")
    await cache.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-port", type=int)
    args = parser.parse_args()
    asyncio.run(in_process())
    if args.redis_port:
        asyncio.run(in_redis(args.redis_port))


if __name__ == "__main__":
    main()
