"""The compile step: one config version's specs -> the route table that serves them.

`config/` validates a document into frozen specs (what the version says);
this builds, from those specs and once per version, everything a request
reads: each route's picker, health state, active checker, semantic and shadow
routers, and its legs (how each instance serves each client protocol). The
embedder pool and the transport are passed in, so the same specs compile the
same way for the gateway, a CLI command or a test.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from semproxy.balancer.priority import build_picker
from semproxy.config.spec import GatewayConfig, RouteSpec
from semproxy.embeddings import Embedder
from semproxy.embeddings.factory import IN_PROCESS, EmbedderPool
from semproxy.embeddings.recent import RecentVectors
from semproxy.errors import BadRequestError, EmbeddingError, NotFoundError
from semproxy.health.active import ActiveChecker
from semproxy.health.state import HealthState, Listener
from semproxy.observability.observer import RequestObserver
from semproxy.protocols.models import serving
from semproxy.runtime.legs import leg_tables
from semproxy.runtime.routes import RouteState, RouteTable
from semproxy.semantic.explain import explain_with
from semproxy.semantic.query import prompt_input
from semproxy.semantic.router import SemanticRouter, open_router
from semproxy.transport.base import Transport
from semproxy.transport.http import AiohttpTransport

RECENT_DEFAULT = 4096  # prompt vectors kept for the cache when the route caches none


def compile_table(config: GatewayConfig, transport: Transport,
                  observer: RequestObserver | None = None,
                  pool: EmbedderPool | None = None) -> RouteTable:
    """The route table of `config`. Health is per route and per config version: a new
    table starts with every instance healthy."""
    if pool is None:
        pool = EmbedderPool(transport, None if observer is None else observer.on_embedding_cache)
    routes = [compile_route(r, pool, transport, observer) for r in config.routes]
    return RouteTable(config, pool, routes)


def compile_route(spec: RouteSpec, pool: EmbedderPool, transport: Transport,
                  observer: RequestObserver | None = None) -> RouteState:
    """One route's state.

    Passive settings are per instance, as they are written: each instance uses
    its own `checks.passive`, or the defaults when it has none. Instances with
    `checks.active` are probed by the route's one `ActiveChecker`, through the
    transport (so an instance's proxy and TLS files apply to its probes).
    """
    algorithm = "roundrobin" if spec.algorithm == "semantic" else spec.algorithm
    picker = build_picker(algorithm, [(i.name, i.weight, i.priority) for i in spec.instances])
    passive = {i.name: i.checks.passive for i in spec.instances if i.checks and i.checks.passive}
    health = HealthState([i.name for i in spec.instances], passive,
                         listener=_health_listener(spec.id, observer))
    state = RouteState(spec, picker, health, leg_tables(spec.instances),
                       by_name={i.name: i for i in spec.instances}, models=serving(spec))
    if spec.cache is not None:
        state.in_process = pool.get(IN_PROCESS)
    if spec.semantic is not None:
        if spec.cache is not None:  # the cache compares the vectors routing makes
            embeddings = spec.semantic.embeddings
            state.recent = RecentVectors(pool.get(embeddings),
                                         embeddings.cache_size or RECENT_DEFAULT)
        state.semantic = _router(spec, pool, embedder=state.recent)
    if spec.shadow is not None:
        state.shadow = _router(spec.shadow.table, pool)
    active = {i.name: (i.target, i.checks.active) for i in spec.instances
              if i.checks and i.checks.active}
    if active:
        state.checker = ActiveChecker(health, active, transport)
    return state


def _health_listener(route: str, observer: RequestObserver | None) -> Listener | None:
    if observer is None:
        return None

    def listener(name: str, healthy: bool) -> None:
        observer.on_health(route, name, healthy)
    return listener


def _router(spec: RouteSpec, pool: EmbedderPool, batch_work: bool = False,
            embedder: Embedder | None = None) -> SemanticRouter:
    """`batch_work`: the strong stage (model: accurate) waits behind live prompts.
    `embedder`: the (fast) stage's own, instead of the pool's chain for the route."""
    assert spec.semantic is not None
    embeddings = spec.semantic.embeddings
    # `is None`, not `or`: an empty `RecentVectors` is falsy (it has a length), and the
    # route would then embed past it, leaving the cache nothing to reuse.
    return open_router(spec, pool.get(embeddings) if embedder is None else embedder,
                       pool.strong(embeddings, batch_work))


@asynccontextmanager
async def router_for(config: GatewayConfig, route_id: str) -> AsyncIterator[SemanticRouter]:
    """A route's router built apart from any running gateway (CLI, playground batches).

    It gets its own embedder chain, so a batch never evicts the live prompt
    cache; its transport is closed on exit.
    """
    route = next((r for r in config.routes if r.id == route_id), None)
    if route is None:
        raise NotFoundError(f"no route with id {route_id!r}")
    if route.semantic is None:
        raise BadRequestError(f"route {route_id!r} does not use semantic balancing")
    transport = AiohttpTransport()
    try:
        yield _router(route, EmbedderPool(transport), batch_work=True)
    finally:
        await transport.aclose()


async def explain(config: GatewayConfig, route_id: str, prompt: str) -> dict[str, Any]:
    """`semproxy explain`: the decision a request with `prompt` gets on the route, with
    every stage the route uses loaded first (the strong one of `model: accurate` too), as
    a started gateway has them."""
    async with router_for(config, route_id) as router:
        # An embedding failure here is shown as the gateway would meet it: routing
        # falls back (`route` tries again and reports the reason).
        with contextlib.suppress(EmbeddingError):
            await router.references()
        return await explain_with(router, prompt_input(prompt))
