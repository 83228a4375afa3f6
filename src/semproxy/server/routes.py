"""The route table of one config version: matching, and candidate order per request.

Everything here is built once per config version and shared by all requests
that started on it; a reload builds a new table and swaps it in whole.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field

from aiohttp import web

from semproxy.balancer import Picker
from semproxy.balancer.priority import build_picker
from semproxy.balancer.semantic import NO_USER_TEXT, Decision, decide, fallback
from semproxy.config.runtime import GatewayConfig, InstanceSpec, RouteSpec, SemanticSpec
from semproxy.embeddings.factory import EmbedderPool
from semproxy.embeddings.scorer import PromptScorer, ScoredInstance
from semproxy.errors import EmbeddingError, MethodNotAllowedError, NotFoundError
from semproxy.health.state import HealthState
from semproxy.server.hashkey import hash_key

log = logging.getLogger("semproxy.routing")


@dataclass(slots=True)
class Candidates:
    """The order in which instances are tried for one request.

    `preferred` (the semantic matches, then the catchall) come first; after them
    the route's balancer picks among the rest, so every instance is reachable
    by failover. Health is applied by the caller through `exclude`.
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

    async def decide(self, text: str) -> Decision:
        if not text:
            return fallback(self.spec.catchall, NO_USER_TEXT)
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
        if not decision.matched:
            log.warning("semantic routing: no instance cleared threshold (scores: %s), "
                        "falling back", decision.scores_text())
        return decision


@dataclass
class RouteState:
    spec: RouteSpec
    picker: Picker
    health: HealthState
    semantic: SemanticSelector | None = None
    by_name: dict[str, InstanceSpec] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [i.name for i in self.spec.instances]

    def candidates(self, request: web.Request, decision: Decision | None,
                   consumer: str | None = None) -> Candidates:
        spec = self.spec
        key = hash_key(request, spec.hash_on, spec.key, consumer) if spec.algorithm == "chash" \
            else None
        preferred: Sequence[str] = ()
        if decision is not None:
            preferred = (*decision.cleared, decision.pick) if decision.matched \
                else (decision.pick,)
        return Candidates(preferred, self.picker, self.names, key)


def build_route(spec: RouteSpec, pool: EmbedderPool) -> RouteState:
    algorithm = "roundrobin" if spec.algorithm == "semantic" else spec.algorithm
    picker = build_picker(algorithm, [(i.name, i.weight, i.priority) for i in spec.instances])
    passive = next((i.checks.passive for i in spec.instances
                    if i.checks and i.checks.passive), None)
    state = RouteState(spec, picker, HealthState([i.name for i in spec.instances], passive),
                       by_name={i.name: i for i in spec.instances})
    if spec.semantic is not None:
        state.semantic = SemanticSelector(spec, spec.semantic, pool)
    return state


class RouteTable:
    """Routes of one config version, matched exact-first, then longest prefix."""

    def __init__(self, config: GatewayConfig, pool: EmbedderPool) -> None:
        self.config = config
        self.version = config.version
        self.pool = pool
        self.routes = [build_route(r, pool) for r in config.routes]
        self._exact = {r.spec.uri: r for r in self.routes if not r.spec.is_prefix}
        self._prefixes = sorted((r for r in self.routes if r.spec.is_prefix),
                                key=lambda r: -len(r.spec.uri))
        self.by_id = {r.spec.id: r for r in self.routes}

    def match(self, path: str, method: str) -> RouteState:
        route = self._exact.get(path) or next(
            (r for r in self._prefixes if path.startswith(r.spec.uri)), None)
        if route is None:
            raise NotFoundError(f"no route for {path}")
        if method not in route.spec.methods:
            raise MethodNotAllowedError(f"method {method} not allowed on {path}")
        return route

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
