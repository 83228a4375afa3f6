"""The route table of one config version: matching, and candidate order per request.

Everything here is built once per config version and shared by all requests
that started on it; a reload builds a new table and swaps it in whole.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Collection, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cached_property

from aiohttp import web

from semproxy.balancer import Picker
from semproxy.balancer.priority import build_picker
from semproxy.balancer.semantic import NO_USER_TEXT, Decision, decide, fallback
from semproxy.config.runtime import GatewayConfig, InstanceSpec, RouteSpec, SemanticSpec
from semproxy.embeddings.factory import EmbedderPool
from semproxy.embeddings.scorer import PromptScorer, References, ScoredInstance
from semproxy.errors import BadRequestError, EmbeddingError, MethodNotAllowedError, NotFoundError
from semproxy.health.active import ActiveChecker
from semproxy.health.state import HealthState
from semproxy.observability.logging import log_line
from semproxy.observability.observer import RequestObserver
from semproxy.providers.base import NativeRelay
from semproxy.providers.http import HttpClients
from semproxy.server.hashkey import hash_key

log = logging.getLogger("semproxy.routing")


@dataclass(slots=True)
class Candidates:
    """The order in which instances are tried for one request, produced lazily.

    `preferred` come first: on a semantic route the instances that cleared their
    threshold, best score first, then the catchall (just the catchall when no
    instance matched). After them the route's balancer picks among the rest, so
    every instance is reachable by failover: its own pick first, then the rest
    of that priority tier in balancer order (round-robin sequence, or clockwise
    on the hash ring), then the lower tiers. Semantic routes order the rest with
    a priority-tiered weighted round-robin. Health is applied by the caller
    through `exclude`, which grows by one name per attempt.
    """

    preferred: Sequence[str]
    picker: Picker
    names: Sequence[str]
    key: str | None

    def next(self, exclude: Collection[str]) -> str | None:
        for name in self.preferred:
            if name not in exclude:
                return name
        return self.picker.pick(self.names, key=self.key, exclude=exclude)


class SemanticSelector:
    """Embeds a prompt, scores it and decides, failing open to the catchall."""

    def __init__(self, route: RouteSpec, spec: SemanticSpec, pool: EmbedderPool) -> None:
        self.route_id = route.id
        self.spec = spec
        with_examples = [i for i in route.instances if i.examples]
        self.scorer = PromptScorer(
            [ScoredInstance(i.name, i.examples, i.negative_examples,
                            spec.threshold if i.threshold is None else i.threshold)
             for i in with_examples],
            pool.get(spec.embeddings), spec.aggregation, spec.k, spec.center,
        )
        # A repeated prompt gets the decision it got before, as long as the
        # reference vectors it was scored against are still the current ones:
        # no embedding, no matrix product. Only scored decisions are kept;
        # failures are retried on the next request.
        self._decisions: OrderedDict[str, tuple[References, Decision]] = OrderedDict()
        self._max_decisions = spec.embeddings.cache_size
        self.hits = 0

    def _remembered(self, text: str) -> Decision | None:
        entry = self._decisions.get(text)
        if entry is None or entry[0] is not self.scorer.current:
            return None
        self._decisions.move_to_end(text)
        self.hits += 1
        return entry[1]

    def _remember(self, text: str, refs: References, decision: Decision) -> None:
        if self._max_decisions <= 0:
            return
        self._decisions[text] = (refs, decision)
        if len(self._decisions) > self._max_decisions:
            self._decisions.popitem(last=False)

    async def decide(self, text: str) -> Decision:
        if not text:
            return fallback(self.spec.catchall, NO_USER_TEXT)
        decision = self._remembered(text)
        if decision is None:
            decision = await self._score(text)
        if decision.ranking and not decision.matched and log.isEnabledFor(logging.WARNING):
            log_line(log, logging.WARNING, "semantic routing: no instance cleared threshold "
                     f"(scores: {decision.scores_text}), falling back")
        return decision

    async def _score(self, text: str) -> Decision:
        try:
            refs, scores, negative = await self.scorer.score(text)
        except EmbeddingError as exc:
            log.warning("semantic routing: %s on route %s, serving %s", exc, self.route_id,
                        self.spec.catchall)
            return fallback(self.spec.catchall, exc.reason)
        except Exception as exc:  # fail-open: routing must never turn a request into a 5xx
            log.warning("semantic routing: unexpected %s on route %s, serving %s",
                        type(exc).__name__, self.route_id, self.spec.catchall)
            return fallback(self.spec.catchall, "embedding_error")
        decision = decide(refs.names, scores, refs.thresholds, self.spec.catchall,
                          min_margin=self.spec.min_margin, negative=negative)
        self._remember(text, refs, decision)
        return decision


@dataclass
class RouteState:
    spec: RouteSpec
    picker: Picker
    health: HealthState
    semantic: SemanticSelector | None = None
    by_name: dict[str, InstanceSpec] = field(default_factory=dict)
    checker: ActiveChecker | None = None  # started and stopped by the Gateway

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Instance names in config order (read twice per request: built once)."""
        return tuple(i.name for i in self.spec.instances)

    @cached_property
    def without_embeddings(self) -> frozenset[str]:
        """Instances that cannot answer an embeddings request (skipped for one)."""
        return frozenset(i.name for i in self.spec.instances if i.embeddings_target is None)

    @cached_property
    def native(self) -> dict[str, frozenset[str]]:
        """Client protocol name -> instances that speak it natively."""
        found: dict[str, set[str]] = {}
        for i in self.spec.instances:
            if isinstance(i.provider, NativeRelay):
                found.setdefault(i.provider.native_protocol, set()).add(i.name)
        return {k: frozenset(v) for k, v in found.items()}

    def candidates(self, request: web.Request, decision: Decision | None,
                   consumer: str | None = None) -> Candidates:
        spec = self.spec
        key = hash_key(request, spec.hash_on, spec.key, consumer) if spec.algorithm == "chash" \
            else None
        preferred: Sequence[str] = ()
        if decision is not None and spec.semantic is not None:
            # The matches best first, then the catchall (already the pick on a fallback).
            preferred = (*decision.cleared, spec.semantic.catchall) if decision.matched \
                else (decision.pick,)
        return Candidates(preferred, self.picker, self.names, key)


def build_route(spec: RouteSpec, pool: EmbedderPool,
                observer: RequestObserver | None = None) -> RouteState:
    """Build one route's state. Health is per route and per config version.

    Passive settings are per instance, as they are written: each instance uses
    its own `checks.passive`, or the defaults when it has none. An instance with
    `checks.active` is probed by the route's one `ActiveChecker`.
    """
    algorithm = "roundrobin" if spec.algorithm == "semantic" else spec.algorithm
    picker = build_picker(algorithm, [(i.name, i.weight, i.priority) for i in spec.instances])
    passive = {i.name: i.checks.passive for i in spec.instances if i.checks and i.checks.passive}
    listener = None
    if observer is not None:
        def listener(name: str, healthy: bool) -> None:
            observer.on_health(spec.id, name, healthy)
    health = HealthState([i.name for i in spec.instances], passive, listener=listener)
    state = RouteState(spec, picker, health, by_name={i.name: i for i in spec.instances})
    if spec.semantic is not None:
        state.semantic = SemanticSelector(spec, spec.semantic, pool)
    active = {i.name: (i.target.url, i.checks.active) for i in spec.instances
              if i.checks and i.checks.active}
    if active:
        state.checker = ActiveChecker(health, active)
    return state


class RouteTable:
    """Routes of one config version, matched exact-first, then longest prefix."""

    def __init__(self, config: GatewayConfig, pool: EmbedderPool,
                 observer: RequestObserver | None = None) -> None:
        self.config = config
        self.version = config.version
        self.pool = pool
        self.routes = [build_route(r, pool, observer) for r in config.routes]
        self._exact = {r.spec.uri: r for r in self.routes if not r.spec.is_prefix}
        self._prefixes = sorted((r for r in self.routes if r.spec.is_prefix),
                                key=lambda r: -len(r.spec.uri))
        self.by_id = {r.spec.id: r for r in self.routes}

    def find(self, path: str) -> RouteState:
        route = self._exact.get(path) or next(
            (r for r in self._prefixes if path.startswith(r.spec.uri)), None)
        if route is None:
            raise NotFoundError(f"no route for {path}")
        return route

    def match(self, path: str, method: str) -> RouteState:
        route = self.find(path)
        if method not in route.spec.methods:
            raise MethodNotAllowedError(f"method {method} not allowed on {path}")
        return route

    def start_checks(self) -> None:
        """Start active health checks of every route that has them (inside the loop)."""
        for route in self.routes:
            if route.checker is not None:
                route.checker.start()

    async def stop_checks(self) -> None:
        for route in self.routes:
            if route.checker is not None:
                await route.checker.stop()

    def semantic_selectors(self) -> Iterator[SemanticSelector]:
        return (r.semantic for r in self.routes if r.semantic is not None)

    async def warm(self) -> None:
        """Build reference vectors now so the first request does not pay for it.

        A failure is only logged: requests fail open and retry the build.
        """
        for selector in self.semantic_selectors():
            try:
                await selector.scorer.references()
            except Exception as exc:  # fail-open: a dead embedder must not block startup
                log.warning("semantic routing: reference build failed for route %s: %s",
                            selector.route_id, exc)


@asynccontextmanager
async def open_selector(config: GatewayConfig, route_id: str) -> AsyncIterator[SemanticSelector]:
    """The route's selector, built as the gateway builds it; HTTP clients closed on exit."""
    spec = next((r for r in config.routes if r.id == route_id), None)
    if spec is None:
        raise NotFoundError(f"no route with id {route_id!r}")
    clients = HttpClients()
    try:
        route = build_route(spec, EmbedderPool(clients))
        if route.semantic is None:
            raise BadRequestError(f"route {route_id!r} does not use semantic balancing")
        yield route.semantic
    finally:
        await clients.aclose()
