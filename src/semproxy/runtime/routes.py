"""The route table of one config version: matching, and candidate order per request.

Everything here is built once per config version (`runtime/compile.py`) and
shared by all requests that started on it; a reload builds a new table and
swaps it in whole.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from semproxy.balancer import Picker
from semproxy.config.spec import GatewayConfig, InstanceSpec, RouteSpec
from semproxy.embeddings import Embedder
from semproxy.embeddings.factory import EmbedderPool
from semproxy.embeddings.recent import RecentVectors
from semproxy.errors import MethodNotAllowedError, NotFoundError
from semproxy.health.active import ActiveChecker
from semproxy.health.state import HealthState
from semproxy.runtime.legs import LegTable
from semproxy.semantic.decision import Decision
from semproxy.semantic.router import SemanticRouter

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


@dataclass
class RouteState:
    spec: RouteSpec
    picker: Picker
    health: HealthState
    legs: Mapping[str, LegTable]  # client protocol name -> how each instance serves it
    semantic: SemanticRouter | None = None
    shadow: SemanticRouter | None = None  # balancer.shadow: decides, never serves
    by_name: dict[str, InstanceSpec] = field(default_factory=dict)
    checker: ActiveChecker | None = None  # started and stopped with its table
    # A model name a client may send -> the instances serving it (protocols/models.py).
    models: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # ai-cache: the routing vectors of recent prompts (semantic routes), and the
    # in-process model (other routes' prompts, answers compared in shadow mode).
    recent: RecentVectors | None = None
    in_process: Embedder | None = None

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Instance names in config order (read twice per request: built once)."""
        return tuple(i.name for i in self.spec.instances)

    def candidates(self, decision: Decision | None, key: str | None) -> Candidates:
        """The candidate order of one request: `decision` on a semantic route, `key` (the
        hash key) on a chash route."""
        preferred: Sequence[str] = ()
        semantic = self.spec.semantic
        if decision is not None and semantic is not None:
            # The matches best first, then the catchall (already the pick when none matched).
            preferred = (*decision.cleared, semantic.catchall) if decision.matched \
                else (decision.pick,)
        return Candidates(preferred, self.picker, self.names, key)


class RouteTable:
    """Routes of one config version, matched exact-first, then longest prefix."""

    def __init__(self, config: GatewayConfig, pool: EmbedderPool,
                 routes: Sequence[RouteState]) -> None:
        self.config = config
        self.version = config.version
        self.pool = pool
        self.routes = list(routes)
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

    def semantic_routers(self) -> Iterator[SemanticRouter]:
        return (r.semantic for r in self.routes if r.semantic is not None)

    def shadow_routers(self) -> Iterator[SemanticRouter]:
        return (r.shadow for r in self.routes if r.shadow is not None)

    async def warm(self) -> None:
        """Build reference vectors now so the first request does not pay for it.

        A failure is only logged: requests fail open and retry the build.
        """
        for router in (*self.semantic_routers(), *self.shadow_routers()):
            try:
                await router.references()
            except Exception as exc:  # fail-open: a dead embedder must not block startup
                log.warning("semantic routing: reference build failed for route %s: %s",
                            router.route_id, exc)
        # A response cache embeds within its deadline: load the in-process model now.
        for embedder in {id(r.in_process): r.in_process for r in self.routes
                         if r.in_process is not None}.values():
            try:
                await embedder.embed(["warm up"])
            except Exception as exc:  # fail-open: the cache then misses until it loads
                log.warning("response cache: the in-process model failed to load: %s", exc)
