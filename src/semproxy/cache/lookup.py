"""The response cache of one store: look a request up, keep an answer, purge.

The lookup phase calls `lookup` with the plan and the vector of the compared
text (the routing vector when semantic routing made one, else the in-process
model's; None leaves the semantic layer out). The exact layer is read first;
on a miss, the partition's candidates are compared in process: the most
similar ones at or above the rule's floor are judged (cache/hitrule.py: near
misses, then the cosine their kind of difference needs) in order, and the first
that passes is the hit. The
account phase calls `store` with the completion it relayed. Every store fault
is a miss or an unwritten answer (`FailOpenStore`), never an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from semproxy.cache import policy
from semproxy.cache.failopen import FailOpenStore
from semproxy.cache.flight import SingleFlight
from semproxy.cache.hitrule import judge
from semproxy.cache.memory import MemoryStore
from semproxy.cache.plan import CachePlan
from semproxy.cache.replay import as_hit
from semproxy.cache.store import Candidates, Entry, IndexItem
from semproxy.cache.wording import read
from semproxy.config.cache import AICache
from semproxy.types import Usage

EXACT = "exact"
SEMANTIC = "semantic"
# Candidates above the rule's floor that are judged, most similar first: a bound on
# the work of one lookup in a partition of many alike prompts.
MAX_CHECKED = 8


@dataclass(frozen=True, slots=True)
class Hit:
    """A stored answer that serves this request: `completion` is what the client gets
    (usage marked cached), `saved` the tokens the upstream call would have cost."""

    completion: dict[str, Any]
    layer: str
    similarity: float | None
    age_s: float
    saved: Usage


@dataclass(frozen=True, slots=True)
class Refused:
    """Why the most similar semantic candidate above the rule's floor did not serve
    (for shadow mode, `explain` and the debug headers): the near-miss rule, or
    `similarity` when its kind of difference needs a higher cosine, and the cosine."""

    reason: str
    similarity: float


class ResponseCache:
    """Lookups and stores against one store, plus the flights of concurrent misses."""

    def __init__(self, store: FailOpenStore, clock: Callable[[], float] = time.time) -> None:
        self.backend = store
        self.flights: SingleFlight[dict[str, Any]] = SingleFlight()
        self._clock = clock

    async def lookup(self, plan: CachePlan, vector: np.ndarray | None) -> Hit | Refused | None:
        """A hit, the near miss that stopped the best candidate, or None (a miss)."""
        hit = await self.lookup_exact(plan)
        if hit is not None or vector is None:
            return hit
        return await self.lookup_semantic(plan, vector)

    async def lookup_exact(self, plan: CachePlan) -> Hit | None:
        """The exact layer alone (the gateway embeds nothing before it misses)."""
        if not plan.control.read:
            return None
        if self.backend.is_local:
            return self._hit(self.backend.get_local(plan.exact), plan, EXACT, None)
        return self._hit(await self.backend.get(plan.exact), plan, EXACT, None)

    def lookup_exact_local(self, plan: CachePlan) -> Hit | None:
        """`lookup_exact` on the in-process store, without a coroutine (`backend.is_local`)."""
        if not plan.control.read:
            return None
        entry = self.backend.get_local(plan.exact)
        return None if entry is None else self._hit(entry, plan, EXACT, None)

    async def lookup_semantic(self, plan: CachePlan, vector: np.ndarray
                              ) -> Hit | Refused | None:
        """The semantic layer alone, after the exact one missed."""
        if not plan.control.read or plan.partition is None:
            return None
        found = await self.backend.candidates(plan.partition, plan.semantic_ttl)
        if found is None or found.matrix.shape[1] != np.shape(vector)[-1]:
            return None  # another model's vectors (a damaged store) never compare
        return await self._semantic(plan, unit(vector), found)

    async def _semantic(self, plan: CachePlan, vector: np.ndarray, found: Candidates
                        ) -> Hit | Refused | None:
        sims = found.matrix @ vector
        rule = plan.rule
        floor = rule.floor
        order = [int(i) for i in np.argsort(-sims)[:MAX_CHECKED] if sims[i] >= floor]
        refused: Refused | None = None
        wording = read(plan.text) if order else None
        for i in order:
            if wording is not None:
                reason = judge(wording, read(found.prompts[i]), float(sims[i]), rule)
                if reason is not None:
                    refused = refused or Refused(reason, float(sims[i]))
                    continue
            entry = await self.backend.get(found.keys[i])
            hit = self._hit(entry, plan, SEMANTIC, float(sims[i]))
            if hit is not None:
                return hit
        return refused

    def _hit(self, entry: Entry | None, plan: CachePlan, layer: str, similarity: float | None
             ) -> Hit | None:
        if entry is None:
            return None
        age = max(0.0, self._clock() - entry.created)
        limit = plan.exact_ttl if layer == EXACT else plan.semantic_ttl
        if age > limit or (plan.control.max_age is not None and age > plan.control.max_age):
            return None
        try:
            stored = orjson.loads(entry.body)
        except orjson.JSONDecodeError:
            return None  # a damaged entry is a miss; the next answer overwrites it
        return Hit(as_hit(stored, layer, similarity, age), layer, similarity, age,
                   usage_of(stored))

    async def store(self, plan: CachePlan, completion: dict[str, Any],
                    vector: np.ndarray | None, body: bytes | None = None) -> str | None:
        """Keep `completion` for `plan`'s request; None when kept, else why not. `body`:
        `completion` serialised already (a whole answer as the upstream sent it)."""
        made = self._entry(plan, completion, vector, body)
        if isinstance(made, str):
            return made
        written = await self.backend.put(*made, plan.semantic_ttl, plan.max_entries)
        return None if written else "store_fault"

    def store_local(self, plan: CachePlan, completion: dict[str, Any],
                    vector: np.ndarray | None, body: bytes | None = None,
                    vetted: bool = False) -> str | None:
        """`store` into the in-process store, without a coroutine (`backend.is_local`).
        `vetted`: the caller found the answer complete (`policy.answer_refusal`) already,
        so only its size is left to check."""
        made = self._entry(plan, completion, vector, body, vetted)
        if isinstance(made, str):
            return made
        written = self.backend.put_local(*made, plan.semantic_ttl, plan.max_entries)
        return None if written else "store_fault"

    def _entry(self, plan: CachePlan, completion: dict[str, Any], vector: np.ndarray | None,
               body: bytes | None, vetted: bool = False
               ) -> str | tuple[str, Entry, int, str | None, IndexItem | None]:
        """What `store` writes (key, entry, TTL, partition, index item), or why nothing."""
        if not plan.control.write:
            return "client"
        if body is None:
            # A copy of exact size: orjson's own buffer keeps about 8 KiB of capacity,
            # which would be most of an entry's memory (bench/cache_memory.py).
            body = bytes(memoryview(orjson.dumps(completion)))
        if vetted:
            if len(body) > plan.max_body:
                return "too_large"
        else:
            refusal = policy.answer_refusal(completion, len(body), plan.max_body)
            if refusal is not None:
                return refusal
        now = self._clock()
        partition = plan.partition if vector is not None else None
        semantic = partition is not None and not policy.is_exact_only(plan.payload, completion)
        ttl = max(plan.exact_ttl, plan.semantic_ttl) if semantic else plan.exact_ttl
        item = IndexItem(plan.exact, unit(vector), plan.text, now) \
            if semantic and vector is not None else None
        return plan.exact, Entry(body, now), ttl, partition if item else None, item

    async def aclose(self) -> None:
        await self.backend.aclose()


def open_cache(conf: AICache) -> ResponseCache:
    """The cache a route's `ai-cache` block asks for (Redis when `redis_host` or
    `policy: redis`, else in process), failing open under `deadline` ms."""
    if conf.store == "redis":
        from semproxy.cache.redis_store import RedisStore, connect  # only routes that use it

        inner: MemoryStore | RedisStore = RedisStore(connect(conf))
    else:
        inner = MemoryStore(conf.memory_max_bytes)
    return ResponseCache(FailOpenStore(inner, deadline_s=conf.deadline / 1000))


def unit(vector: np.ndarray) -> np.ndarray:
    """`vector` as float32 of length 1 (a zero vector stays zero and matches nothing)."""
    flat = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.sqrt(flat.dot(flat)))  # np.linalg.norm's own sum, without its wrapper
    return flat / norm if norm > 0 else flat


def usage_of(completion: dict[str, Any]) -> Usage:
    usage = completion.get("usage")
    if not isinstance(usage, dict):
        return Usage(estimated=True)
    details = usage.get("prompt_tokens_details") or {}
    return Usage(input=int(usage.get("prompt_tokens") or 0),
                 output=int(usage.get("completion_tokens") or 0),
                 cached_input=int(details.get("cached_tokens") or 0))
