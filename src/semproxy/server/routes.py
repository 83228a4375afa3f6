"""The route table of one config version: matching, and candidate order per request.

Everything here is built once per config version and shared by all requests
that started on it; a reload builds a new table and swaps it in whole.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from aiohttp import web

from semproxy.balancer import Picker
from semproxy.balancer.priority import build_picker
from semproxy.config.runtime import GatewayConfig, InstanceSpec, RouteSpec
from semproxy.embeddings.factory import EmbedderPool
from semproxy.errors import MethodNotAllowedError, NotFoundError
from semproxy.health.active import ActiveChecker
from semproxy.health.state import HealthState
from semproxy.observability.observer import RequestObserver
from semproxy.providers.base import NativeRelay
from semproxy.semantic.decision import Decision
from semproxy.semantic.router import SemanticRouter, open_router
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


@dataclass
class RouteState:
    spec: RouteSpec
    picker: Picker
    health: HealthState
    semantic: SemanticRouter | None = None
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
        embeddings = spec.semantic.embeddings
        state.semantic = open_router(spec, pool.get(embeddings), pool.strong(embeddings))
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

    def semantic_routers(self) -> Iterator[SemanticRouter]:
        return (r.semantic for r in self.routes if r.semantic is not None)

    async def warm(self) -> None:
        """Build reference vectors now so the first request does not pay for it.

        A failure is only logged: requests fail open and retry the build.
        """
        for router in self.semantic_routers():
            try:
                await router.references()
            except Exception as exc:  # fail-open: a dead embedder must not block startup
                log.warning("semantic routing: reference build failed for route %s: %s",
                            router.route_id, exc)
