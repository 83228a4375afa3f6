"""lookup: the response cache, between the route decision and the upstream call.

A route with the `ai-cache` plugin gets a `CachePhase` in its pipeline (none
otherwise: `cache_for` finds nothing and the phase costs the route nothing).
Its two halves:

- `run`, after the route phase (the serving instance is known): plans the
  request (cache/plan.py: keys from the route, the instance that serves, its
  upstream model and options, the whole effective body and the consumer's
  namespace; or a bypass), then, unless the client said not to read, joins the
  single flight of its exact key, looks the exact layer up and, on a miss, the
  semantic one with the vector of the compared turn (the one routing made on a
  semantic route, `RouteState.recent`; the in-process model's elsewhere). A hit
  is an `Answer` in the client's protocol and mode (server/cache_answer.py)
  with `exchange.source` "cache"; a follower of a running flight is served the
  leader's answer, a streaming one its events as they come. A miss returns
  None and registers a `CacheTap` on a stream. Every fault, and a lookup
  longer than the route's `deadline`, is a miss.
- `account`, whatever ended the request: counts what the cache did, settles the
  flight, and stores a complete answer (cache/policy.py decides what is) under
  the keys of the instance that served it (server/cache_account.py).

In `mode: shadow` the request is always served by the upstream: `run` looks it
up and remembers what would have served, `account` stores the fresh answer and
compares the two (cache/shadow.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from semproxy.cache import keys
from semproxy.cache.control import BYPASS
from semproxy.cache.flight import Flight
from semproxy.cache.hitrule import judge
from semproxy.cache.lookup import EXACT, Hit, Refused, ResponseCache
from semproxy.cache.plan import Bypass, CachePlan, compile_spec, plan
from semproxy.cache.replay import as_hit
from semproxy.cache.stores import CacheStores
from semproxy.cache.tap import CacheTap, Completion
from semproxy.cache.wording import read
from semproxy.governance.pricing import Price
from semproxy.protocols.chat import CHAT
from semproxy.runtime.routes import RouteState
from semproxy.server.cache_account import CacheAccount
from semproxy.server.cache_answer import (
    HIT_EXACT,
    HIT_SEMANTIC,
    cache_headers,
    follower_answer,
    hit_answer,
    wants_stream,
)
from semproxy.server.exchange import Answer, Exchange
from semproxy.types import Usage

log = logging.getLogger("semproxy.cache")

MISS = "MISS"
CHAT_LIKE = frozenset({CHAT, "messages", "responses"})  # embeddings are not cached


@dataclass(slots=True)
class CacheVisit:
    """What the cache did with one request: the access line, metrics and headers read it."""

    status: str  # HIT-L1, HIT-L2, MISS, BYPASS, REFRESH
    plan: CachePlan | None = None
    layer: str | None = None
    similarity: float | None = None
    age: float | None = None
    detail: str | None = None  # why a bypass, which rule refused the closest entry
    vector: np.ndarray | None = None
    flight: Flight[Completion] | None = None
    tap: CacheTap | None = None
    would: Hit | None = None  # shadow mode: the answer the cache would have given

    def fields(self) -> dict[str, Any]:
        """The access line's `cache` object."""
        if self.age is None and self.detail is None and self.similarity is None \
                and self.would is None and self.layer is None:
            return {"status": self.status}  # a plain miss (or refresh): the common line
        out: dict[str, Any] = {"status": self.status}
        for name in ("layer", "detail"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.similarity is not None:
            out["similarity"] = round(self.similarity, 4)
        if self.age is not None:
            out["age"] = int(self.age)
        if self.would is not None:
            out["shadow"] = HIT_EXACT if self.would.layer == EXACT else HIT_SEMANTIC
        return out


class CachePhase:
    """The lookup phase (and its accounting) of one route with `ai-cache`."""

    def __init__(self, route: RouteState, caches: CacheStores,
                 prices: Mapping[str, Price]) -> None:
        spec = route.spec
        conf = spec.cache
        assert conf is not None
        self.route = route
        self.conf = conf
        self.spec = compile_spec(spec.id, conf, spec.cache_model)
        self.cache: ResponseCache = caches.get(conf)
        self.shadow = conf.mode == "shadow"
        self.deadline_s = conf.deadline / 1000
        # A follower waits for its leader as long as it would wait for an upstream.
        self.wait_s = max(i.target.net.timeout_s for i in spec.instances)
        self.upstreams = {i.name: keys.Upstream(i.name, i.provider.name, i.target.url,
                                                i.options) for i in spec.instances}
        self.accounting = CacheAccount(self, caches, prices)
        # The headers of a miss without debug headers (most misses): made once.
        self.debug = spec.debug_headers
        self.miss_headers = cache_headers(conf, False, MISS, None, None, None, None)
        if conf.semantic_on:  # load the hit rule's word lists now, not within a deadline
            judge(read("warm up"), read("warm up please"), 1.0, self.spec.rule)

    async def run(self, exchange: Exchange) -> Answer | None:
        if exchange.protocol.name not in CHAT_LIKE:
            return None  # embeddings: nothing to cache
        found = self.plan(exchange, exchange.pick)
        if isinstance(found, Bypass):
            visit = exchange.cache = CacheVisit(BYPASS, detail=found.reason)
            self.headers(exchange, visit)
            return None
        visit = exchange.cache = CacheVisit(found.control.status or MISS, plan=found)
        if found.control.read:
            answer = await self.read(exchange, visit, found)
            if answer is not None:
                return answer
        if found.payload.get("stream") is True:  # wants_stream
            visit.tap = CacheTap(found.max_body, exchange.model, visit.flight)
            exchange.taps = [*(exchange.taps or ()), visit.tap]
        if visit.status == MISS and not self.debug:  # the common miss, without a call
            headers = exchange.headers
            exchange.headers = {**headers, **self.miss_headers} if headers \
                else {**self.miss_headers}
        else:
            self.headers(exchange, visit)
        return None

    def plan(self, exchange: Exchange, instance: str | None) -> CachePlan | Bypass:
        parsed = exchange.parsed
        if parsed is None or parsed.unsupported is not None or instance is None:
            return Bypass("unsupported")
        payload = parsed.payload
        legs = exchange.legs
        leg = legs.legs.get(instance) if legs is not None else None
        if leg is not None and leg.native and exchange.protocol.name != CHAT and parsed.native:
            # A native leg sends the client's own body: fields the Chat form leaves out
            # (Anthropic's top_k, thinking...) change the answer, so they key it too.
            payload = {**payload, "native": {k: v for k, v in parsed.native.items()
                                             if k not in ("messages", "stream")}}
        return plan(self.spec, payload, self.upstreams[instance], exchange.cache_headers or {},
                    exchange.consumer, exchange.cache_vars)

    def plan_for(self, payload: Mapping[str, Any], instance: str, headers: Mapping[str, str],
                 consumer: str | None, variables: Mapping[str, str] | None
                 ) -> CachePlan | Bypass:
        """The plan of a Chat Completions `payload` served by `instance` (explain uses it)."""
        return plan(self.spec, payload, self.upstreams[instance], headers, consumer, variables)

    async def read(self, exchange: Exchange, visit: CacheVisit, found: CachePlan
                   ) -> Answer | None:
        cache = self.cache
        if cache.backend.is_local:
            # The exact read first: nothing runs between it and the join below (no await),
            # and an entry is written when its flight ends, so a key with a flight running
            # has no entry yet: the order changes nothing, and a hit needs no flight.
            hit = cache.lookup_exact_local(found)
            if hit is None:
                answer = await self.join(exchange, visit, found)
                if answer is not None:
                    return answer
                if found.layered and found.partition is not None:
                    hit = await self.semantic(visit, found)
        else:
            answer = await self.join(exchange, visit, found)
            if answer is not None:
                return answer
            hit = await self.look(exchange, visit, found)
        if hit is None:
            return None
        if self.shadow:
            visit.would = hit
            self.accounting.book.would_hit(self.route.spec.id, hit.layer)
            visit.detail = f"shadow {HIT_EXACT if hit.layer == EXACT else HIT_SEMANTIC}"
            return None
        if visit.flight is not None:
            visit.flight.resolve(hit.completion)
        return self.hit(exchange, visit, hit)

    async def join(self, exchange: Exchange, visit: CacheVisit, found: CachePlan
                   ) -> Answer | None:
        """Lead the flight of this exact key, or follow the one running: the leader's
        answer, or None (this request leads, or calls upstream itself)."""
        if self.shadow:
            return None
        flight = self.cache.flights.join(found.exact)
        if flight.leader:
            visit.flight = flight
            return None
        return await self.follow(exchange, visit, flight)

    async def follow(self, exchange: Exchange, visit: CacheVisit,
                     flight: Flight[Completion]) -> Answer | None:
        """A concurrent identical request is calling upstream: its answer serves this one
        (None: it got none, this request calls upstream itself)."""
        if wants_stream(exchange) and await flight.started(self.wait_s):
            self.hit_visit(exchange, visit, EXACT, None, 0.0)
            return follower_answer(exchange, flight, self.wait_s)
        completion = flight.settled() if wants_stream(exchange) \
            else await flight.wait(self.wait_s)
        if completion is None:
            return None
        return self.hit(exchange, visit, Hit(as_hit(completion, EXACT, None, 0.0), EXACT, None,
                                             0.0, self.accounting.usage_of(completion)))

    async def look(self, exchange: Exchange, visit: CacheVisit, found: CachePlan
                   ) -> Hit | None:
        """The exact layer, then the semantic one; a miss on any fault or past the deadline."""
        # The exact read is one store call, under the store's own deadline.
        hit = await self.cache.lookup_exact(found)
        if hit is not None or not found.layered or found.partition is None:
            return hit
        return await self.semantic(visit, found)

    async def semantic(self, visit: CacheVisit, found: CachePlan) -> Hit | None:
        """The semantic layer (the exact one missed); a miss on any fault or past the
        deadline."""
        try:
            async with asyncio.timeout(self.deadline_s):
                vector = visit.vector = await self.vector(found.text)
                if vector is None:
                    return None
                semantic = await self.cache.lookup_semantic(found, vector)
        except Exception as exc:  # fail-open: the cache never fails or delays a request
            self.accounting.fault(exc)
            return None
        if isinstance(semantic, Refused):
            visit.similarity, visit.detail = semantic.similarity, semantic.reason
            return None
        return semantic

    async def vector(self, text: str) -> np.ndarray | None:
        """The compared text's vector: the one routing just made when it is at hand."""
        recent = self.route.recent
        if recent is not None:
            row = recent.recall(text)
            return row if row is not None else (await recent.embed([text]))[0]
        embedder = self.route.in_process
        return None if embedder is None else (await embedder.embed([text]))[0]

    def hit(self, exchange: Exchange, visit: CacheVisit, hit: Hit) -> Answer:
        self.hit_visit(exchange, visit, hit.layer, hit.similarity, hit.age_s)
        saved = hit.saved  # as the answer reports it: every prompt token cached
        exchange.usage = Usage(saved.input, saved.output, saved.input, saved.estimated)
        return hit_answer(exchange, hit.completion)

    def hit_visit(self, exchange: Exchange, visit: CacheVisit, layer: str,
                  similarity: float | None, age: float) -> None:
        exchange.source = "cache"
        visit.status = HIT_EXACT if layer == EXACT else HIT_SEMANTIC
        visit.layer, visit.similarity, visit.age = layer, similarity, age
        visit.detail = None
        self.headers(exchange, visit)

    def headers(self, exchange: Exchange, visit: CacheVisit) -> None:
        if visit.status == MISS and not self.debug:
            added = self.miss_headers  # a miss says no more without debug headers
        else:
            added = cache_headers(self.conf, self.debug, visit.status, visit.age,
                                  visit.similarity, visit.layer, visit.detail)
        if added:
            exchange.headers = {**exchange.headers, **added} if exchange.headers else {**added}

    async def account(self, exchange: Exchange) -> None:
        await self.accounting.account(exchange)


def cache_for(route: RouteState, caches: CacheStores, prices: Mapping[str, Price]
              ) -> CachePhase | None:
    """The response cache of `route`, None when it has no `ai-cache` plugin."""
    return None if route.spec.cache is None else CachePhase(route, caches, prices)
