"""The semantic router of one route: the single place a prompt becomes a decision.

The gateway (one request at a time, failing open), `semproxy explain`, `eval`,
`calibrate` and the playground (batches, failing loudly) all hold a
`SemanticRouter` built by `open_router`, so they embed, score and decide the
same way. Nothing here knows about HTTP.
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import NamedTuple

import numpy as np

from semproxy.config.runtime import GatewayConfig, RouteSpec, SemanticSpec
from semproxy.embeddings import Embedder
from semproxy.embeddings.factory import EmbedderPool
from semproxy.errors import BadRequestError, EmbeddingError, NotFoundError
from semproxy.observability.logging import log_line
from semproxy.providers.http import HttpClients
from semproxy.semantic.cascade import CascadeScorer
from semproxy.semantic.decision import NO_USER_TEXT, Decision, decide, fallback
from semproxy.semantic.query import RoutingInput
from semproxy.semantic.scorer import PromptScorer, References, ScoredInstance

log = logging.getLogger("semproxy.routing")


class Routed(NamedTuple):
    """A decision and whether the decision cache answered it.

    `cached` travels with the result (rather than being read off a shared
    counter) so a concurrent request can never be credited with another's hit.
    It is None when the cache was not consulted (no user text, or no cache).
    """

    decision: Decision
    cached: bool | None


class SemanticRouter:
    """Embeds, scores and decides for one route of one config version."""

    def __init__(self, route_id: str, spec: SemanticSpec, scorer: PromptScorer,
                 cascade: CascadeScorer | None = None) -> None:
        self.route_id = route_id
        self.spec = spec
        self.scorer = scorer
        # model: accurate: `scorer` is the fast stage, the cascade adds the strong one.
        self.cascade = cascade
        self.stages: Counter[str] = Counter()  # which stage decided (cascade only)
        # A repeated prompt gets the decision it got before, as long as the
        # reference vectors it was scored against are still the current ones:
        # no embedding, no matrix product. Only scored decisions are kept;
        # failures are retried on the next request.
        self._decisions: OrderedDict[str, tuple[References, Decision]] = OrderedDict()
        self._max_decisions = spec.embeddings.cache_size

    @property
    def names(self) -> tuple[str, ...]:
        """Instances with examples, in config order (the catchall may be one of them)."""
        return self.scorer.names

    @property
    def thresholds(self) -> tuple[float, ...]:
        """The thresholds in force (of the fast stage under `model: accurate`)."""
        return self.scorer.thresholds

    async def references(self) -> References:
        if self.cascade is not None:
            return await self.cascade.references()  # and the strong ones in the background
        return await self.scorer.references()

    def decide(self, scores: np.ndarray, negative: np.ndarray | None = None,
               thresholds: Sequence[float] | None = None) -> Decision:
        """The route's rule on one row of scores (its own thresholds unless others are tried)."""
        return decide(self.names, scores, self.thresholds if thresholds is None else thresholds,
                      self.spec.catchall, min_margin=self.spec.min_margin, negative=negative)

    # -- one request (the gateway): cached, fail-open ---------------------------
    async def route(self, query: RoutingInput) -> Routed:
        """The decision for one request; any failure serves the catchall."""
        text = query.text
        if not text:
            return Routed(fallback(self.spec.catchall, NO_USER_TEXT), None)
        decision = self._remembered(text)
        cached = decision is not None
        if decision is None:
            decision = await self._score(text)
        if decision.ranking and not decision.matched and log.isEnabledFor(logging.WARNING):
            log_line(log, logging.WARNING, "semantic routing: no instance cleared threshold "
                     f"(scores: {decision.scores_text}), falling back")
        return Routed(decision, cached if self._max_decisions > 0 else None)

    def _remembered(self, text: str) -> Decision | None:
        entry = self._decisions.get(text)
        if entry is None or entry[0] is not self.scorer.current:
            return None
        self._decisions.move_to_end(text)
        return entry[1]

    def _remember(self, text: str, refs: References, decision: Decision) -> None:
        if self._max_decisions <= 0:
            return
        self._decisions[text] = (refs, decision)
        if len(self._decisions) > self._max_decisions:
            self._decisions.popitem(last=False)

    async def _score(self, text: str) -> Decision:
        try:
            if self.cascade is None:
                refs, scores, negative = await self.scorer.score_many((text,))
            else:
                (refs, scores, negative), stage = await self.cascade.score(text)
                self.stages[stage] += 1
        except EmbeddingError as exc:
            log.warning("semantic routing: %s on route %s, serving %s", exc, self.route_id,
                        self.spec.catchall)
            return fallback(self.spec.catchall, exc.reason)
        except Exception as exc:  # fail-open: routing must never turn a request into a 5xx
            log.warning("semantic routing: unexpected %s on route %s, serving %s",
                        type(exc).__name__, self.route_id, self.spec.catchall)
            return fallback(self.spec.catchall, "embedding_error")
        # The deciding stage's thresholds: cosine scales differ between the models.
        decision = self.decide(scores[0], None if negative is None else negative[0],
                               refs.thresholds)
        # Remembered against the fast stage's references, which both stages' live as long as.
        self._remember(text, self.scorer.current or refs, decision)
        return decision

    # -- many prompts (eval, calibrate, playground): batched, errors raised -------
    async def score_many(self, texts: Sequence[str]
                         ) -> tuple[np.ndarray, np.ndarray | None]:
        """`(n, n_instances)` scores (and negatives) of many texts: one embedding call.

        Under `model: accurate` the ambiguous rows hold the strong model's scores.
        """
        scores, negative, _ = await self._score_rows(texts)
        return scores, negative

    async def _score_rows(self, texts: Sequence[str]
                          ) -> tuple[np.ndarray, np.ndarray | None, list[tuple[float, ...]]]:
        """Scores, negatives, and each row's thresholds (those of the stage that scored it)."""
        if self.cascade is None:
            refs, scores, negative = await self.scorer.score_many(texts)
            return scores, negative, [refs.thresholds] * len(texts)
        (refs, scores, negative), stages = await self.cascade.score_many(texts)
        return scores, negative, [(self.cascade.refs_for(s) or refs).thresholds for s in stages]

    async def route_many(self, queries: Sequence[RoutingInput]) -> list[Decision]:
        """`route` for many inputs with one embedding call, without the cache.

        It does not fail open: an embedding error is raised, because figures
        computed from fallbacks would be meaningless.
        """
        decisions = [fallback(self.spec.catchall, NO_USER_TEXT) for _ in queries]
        todo = [i for i, q in enumerate(queries) if q.text]
        if not todo:
            return decisions
        scores, negative, thresholds = await self._score_rows([queries[i].text for i in todo])
        for row, i in enumerate(todo):
            decisions[i] = self.decide(scores[row], None if negative is None else negative[row],
                                       thresholds[row])
        return decisions


def open_router(route: RouteSpec, embedder: Embedder, strong: Embedder | None = None
                ) -> SemanticRouter:
    """The router of a semantic route: the one way every caller builds it.

    `strong` is the second stage of `model: accurate` (EmbedderPool.strong).
    """
    spec = route.semantic
    if spec is None:
        raise BadRequestError(f"route {route.id!r} does not use semantic balancing")
    instances = [ScoredInstance(i.name, i.examples, i.negative_examples,
                                i.threshold if i.threshold is not None
                                else None if spec.auto_threshold else spec.threshold)
                 for i in route.instances if i.examples]
    fast = PromptScorer(instances, embedder, spec.aggregation, spec.k, spec.center)
    # The strong stage never centres: centring corrects the common component of
    # averaged word vectors, and measured worse on MiniLM's vectors.
    cascade = None if strong is None else CascadeScorer(
        fast, PromptScorer(instances, strong, spec.aggregation, spec.k))
    return SemanticRouter(route.id, spec, fast, cascade)


@asynccontextmanager
async def router_for(config: GatewayConfig, route_id: str) -> AsyncIterator[SemanticRouter]:
    """A route's router built apart from any running gateway (CLI, playground batches).

    It gets its own embedder chain, so a batch never evicts the live prompt
    cache; its HTTP clients are closed on exit.
    """
    route = next((r for r in config.routes if r.id == route_id), None)
    if route is None:
        raise NotFoundError(f"no route with id {route_id!r}")
    if route.semantic is None:
        raise BadRequestError(f"route {route_id!r} does not use semantic balancing")
    clients = HttpClients()
    try:
        pool = EmbedderPool(clients)
        embeddings = route.semantic.embeddings
        yield open_router(route, pool.get(embeddings), pool.strong(embeddings))
    finally:
        await clients.aclose()
