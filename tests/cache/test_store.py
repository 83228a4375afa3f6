"""The response cache against the in-process store: hits, misses, TTL, bytes, purge."""

from __future__ import annotations

import numpy as np

from semproxy.cache import keys
from semproxy.cache.failopen import FailOpenStore
from semproxy.cache.lookup import Hit, Refused, ResponseCache
from semproxy.cache.memory import MemoryStore
from semproxy.cache.plan import CachePlan, compile_spec, plan
from semproxy.config.cache import AICache

UP = keys.Upstream("gpt", "openai", "https://x/v1/chat/completions", {"model": "m"})
ANSWER = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "42"},
                       "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}}
SEMANTIC = {"layers": ["exact", "semantic"], "semantic": {"similarity_threshold": 0.8}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _plan(text: str, consumer: str = "alice", headers: dict[str, str] | None = None,
          conf: dict[str, object] | None = None) -> CachePlan:
    spec = compile_spec("r1", AICache.model_validate(conf or SEMANTIC), "wordllama")
    found = plan(spec, {"messages": [{"role": "user", "content": text}]}, UP, headers or {},
                 consumer)
    assert isinstance(found, CachePlan)
    return found


def _cache(clock: Clock, max_bytes: int = 1 << 20) -> tuple[ResponseCache, MemoryStore]:
    store = MemoryStore(max_bytes, clock)
    return ResponseCache(FailOpenStore(store), clock), store


V1 = np.array([1.0, 0.0, 0.0], dtype=np.float32)
NEAR = np.array([0.95, 0.31, 0.0], dtype=np.float32)  # cosine 0.95 with V1


async def test_exact_hit_then_semantic_hit_with_usage_marked_cached() -> None:
    clock = Clock()
    cache, _ = _cache(clock)
    assert await cache.store(_plan("what is the answer"), ANSWER, V1) is None
    clock.now += 5
    exact = await cache.lookup(_plan("what is the answer"), V1)
    assert isinstance(exact, Hit) and exact.layer == "exact" and exact.age_s == 5
    assert exact.completion["usage"]["prompt_tokens_details"]["cached_tokens"] == 7
    assert exact.saved.input == 7 and exact.completion["id"] != "c1"
    near = await cache.lookup(_plan("tell me what the answer is"), NEAR)
    assert isinstance(near, Hit) and near.layer == "semantic"
    assert near.similarity is not None and abs(near.similarity - 0.95) < 0.01


async def test_a_near_miss_above_the_threshold_is_refused() -> None:
    cache, _ = _cache(Clock())
    await cache.store(_plan("set a timer for 15 minutes"), ANSWER, V1)
    found = await cache.lookup(_plan("set a timer for 50 minutes"), V1)
    assert found == Refused("number", 1.0)


async def test_another_consumer_never_gets_the_answer() -> None:
    cache, _ = _cache(Clock())
    await cache.store(_plan("what is the answer"), ANSWER, V1)
    assert await cache.lookup(_plan("what is the answer", consumer="bob"), V1) is None


async def test_ttl_max_age_and_no_cache_are_honoured() -> None:
    clock = Clock()
    cache, _ = _cache(clock)
    await cache.store(_plan("q"), ANSWER, V1)
    clock.now += 30
    assert await cache.lookup(_plan("q", headers={"Cache-Control": "max-age=10"}), V1) is None
    assert await cache.lookup(_plan("q", headers={"Cache-Control": "no-cache"}), V1) is None
    assert isinstance(await cache.lookup(_plan("q"), V1), Hit)
    clock.now += 3600
    assert await cache.lookup(_plan("q"), None) is None  # exact.ttl is 3600


async def test_incomplete_answers_are_not_stored() -> None:
    cache, store = _cache(Clock())
    cut = {**ANSWER, "choices": [{"index": 0, "message": {"content": "4"},
                                  "finish_reason": None}]}
    assert await cache.store(_plan("q"), cut, V1) == "incomplete"
    assert len(store) == 0


async def test_the_store_is_bounded_by_bytes_and_evicts_the_least_recent() -> None:
    clock = Clock()
    cache, store = _cache(clock, max_bytes=8000)
    for i in range(20):
        await cache.store(_plan(f"question {i}", conf={}), ANSWER, None)
    assert store.bytes <= 8000 and store.evictions > 0
    assert await cache.lookup(_plan("question 0", conf={}), None) is None
    assert isinstance(await cache.lookup(_plan("question 19", conf={}), None), Hit)


async def test_purge_by_consumer_leaves_the_others() -> None:
    cache, _ = _cache(Clock())
    await cache.store(_plan("q", consumer="alice"), ANSWER, V1)
    await cache.store(_plan("q", consumer="bob"), ANSWER, V1)
    assert await cache.backend.purge(keys.purge_pattern("ai-cache", consumer="alice")) == 1
    assert await cache.lookup(_plan("q", consumer="alice"), V1) is None
    assert isinstance(await cache.lookup(_plan("q", consumer="bob"), V1), Hit)
