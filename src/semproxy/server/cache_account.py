"""The response cache's accounting half: what a finished request leaves in the cache.

Run after every request of a route with `ai-cache`, whatever ended it:

- it reports what the cache did (`on_cache`) and, for a hit, the upstream
  tokens and money it saved (`on_cache_saved`; the governance account counts
  the request but no tokens, `exchange.source` being "cache");
- it settles the single flight the request led, with its answer when that
  answer may be shared, so followers are served at once;
- it stores a complete answer (the terminal event seen, no error, no
  content-filter stop: cache/policy.py) under the keys of the instance that
  actually served (another one than the first pick after a failover): in a
  background job when the store is Redis or the compared turn must be embedded
  first, so the answer never waits for either; at once in process memory;
- in shadow mode it also compares the answer the cache would have given with
  the fresh one, in another background job.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import orjson

from semproxy.cache import policy
from semproxy.cache.lookup import Hit, usage_of
from semproxy.cache.plan import CachePlan
from semproxy.cache.shadow import answer_similarity
from semproxy.cache.stores import CacheStores
from semproxy.cache.tap import Completion, whole_completion
from semproxy.governance.pricing import FREE, Price, to_money
from semproxy.observability.logging import log_line
from semproxy.observability.observer import RequestObserver
from semproxy.protocols.chat import CHAT
from semproxy.server.exchange import Exchange
from semproxy.types import Usage

if TYPE_CHECKING:
    from semproxy.server.lookup import CachePhase, CacheVisit

log = logging.getLogger("semproxy.cache")
shadow_log = logging.getLogger("semproxy.cache.shadow")

QUIET_S = 10.0  # a failing store is logged once per this many seconds, not per request
NO_LIMIT = 1 << 62


class CacheAccount:
    def __init__(self, phase: CachePhase, caches: CacheStores,
                 prices: Mapping[str, Price]) -> None:
        self.phase = phase
        self.caches = caches
        self.book = caches.shadow
        self.prices = prices
        self.route = phase.route.spec.id
        self.shadow = phase.shadow
        self.cache = phase.cache
        self._logged = -QUIET_S

    async def account(self, exchange: Exchange) -> None:
        visit = exchange.cache
        if visit is None:
            return
        observer = exchange.observer
        observer.on_cache(self.route, visit.status, visit.layer)
        if exchange.source == "cache":
            self.saved(exchange, observer)
            return
        found = visit.plan
        if found is None:
            return
        if self.shadow:
            self.book.looked_up(self.route)
        completion, refusal, body = answer_of(exchange, visit)
        if visit.flight is not None:
            visit.flight.resolve(completion)
        if completion is None:
            observer.on_cache_store(self.route, refusal)
            return
        served = exchange.attempts[-1].instance if exchange.attempts else exchange.pick
        if served != exchange.pick:  # a failover: the answer is that instance's
            again = self.phase.plan(exchange, served)
            found = again if isinstance(again, CachePlan) else None
        if found is not None and found.control.write:
            cache = self.cache
            if cache.backend.is_local and (visit.vector is not None or not found.layered
                                           or found.partition is None):
                # In memory, with nothing to embed: done before a task could start.
                outcome = cache.store_local(found, completion, visit.vector, body, vetted=True)
                observer.on_cache_store(self.route, outcome or "stored")
            else:
                self.caches.spawn(self.store(found, completion, visit.vector, observer, body))
        if visit.would is not None:
            self.caches.spawn(self.compare(visit.would, completion, observer,
                                           exchange.request_id))

    def saved(self, exchange: Exchange, observer: RequestObserver) -> None:
        usage = exchange.usage
        if usage is None:
            return
        price = self.prices.get(exchange.pick or "", FREE)
        # What the upstream call would have cost, its prompt at the full input price.
        money = to_money(price.cost(Usage(input=usage.input, output=usage.output)))
        observer.on_cache_saved(self.route, usage, money)

    async def store(self, found: CachePlan, completion: Completion,
                    vector: np.ndarray | None, observer: RequestObserver,
                    body: bytes | None = None) -> None:
        if vector is None and found.partition is not None \
                and not policy.is_exact_only(found.payload, completion):
            try:
                async with asyncio.timeout(self.phase.deadline_s):
                    vector = await self.phase.vector(found.text)
            except Exception as exc:  # fail-open: stored for the exact layer only
                self.fault(exc)
        outcome = await self.phase.cache.store(found, completion, vector, body)
        observer.on_cache_store(self.route, outcome or "stored")

    async def compare(self, would: Hit, fresh: Completion, observer: RequestObserver,
                      request_id: str) -> None:
        embedder = self.phase.route.in_process
        if embedder is None:
            return
        try:
            similarity = await answer_similarity(embedder, would.completion, fresh)
        except Exception as exc:  # fail-open: a comparison never fails a request
            self.fault(exc)
            return
        wrong = similarity is not None and similarity < self.phase.conf.shadow_threshold
        record = {"request_id": request_id, "prompt_similarity": _rounded(would.similarity),
                  "answer_similarity": _rounded(similarity), "age": int(would.age_s)}
        self.book.compared(self.route, would.layer, wrong, record)
        observer.on_cache_shadow(self.route, would.layer, similarity, wrong)
        log_line(shadow_log, logging.INFO, f"{self.route} {request_id} would hit "
                 f"({would.layer}){' wrong' if wrong else ''}",
                 {"route": self.route, "layer": would.layer, "wrong": wrong, **record})

    def usage_of(self, completion: Completion) -> Usage:
        return usage_of(completion)

    def fault(self, exc: BaseException) -> None:
        """A fault the store wrapper did not see (the whole lookup's deadline, an
        embedding): counted with the store's faults, logged at most once per QUIET_S."""
        self.phase.cache.backend.faults += 1
        now = time.monotonic()
        if now - self._logged >= QUIET_S:
            self._logged = now
            what = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
            log.warning("response cache of route %s: %s; answering as a miss (fail-open)",
                        self.route, what)


def answer_of(exchange: Exchange, visit: CacheVisit
              ) -> tuple[Completion | None, str, bytes | None]:
    """The request's answer as a storable Chat Completions object, or None and why not;
    with its bytes when the upstream sent it whole as Chat Completions (stored as sent,
    not serialised again)."""
    if exchange.status != 200:
        return None, "error", None
    body = None
    if visit.tap is not None:
        completion = visit.tap.completion()
        if completion is None:
            return None, visit.tap.assembler.failed or "incomplete", None
    else:
        answer = exchange.answer
        body = None if answer is None else answer.body
        if answer is None or body is None:
            return None, "incomplete", None
        if answer.speaks.source == CHAT:  # `whole_completion` of a Chat body, inline
            try:
                completion = orjson.loads(body)
            except orjson.JSONDecodeError:  # fail-open: an answer the cache cannot read
                completion = None
        else:
            completion, body = whole_completion(body, answer.speaks.source), None
    refusal = policy.answer_refusal(completion, 0, NO_LIMIT)
    return (None, refusal, None) if refusal is not None else (completion, "", body)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)

