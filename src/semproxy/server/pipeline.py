"""The request path, top to bottom, and the per-route phase list compiled once per version.

    enter    route match, auth (consumer), read + parse body in the client's protocol
    admit    limits and budgets (server/admit.py: spend governance)
    route    balancer or semantic decision, candidate order, first pick
    lookup   response cache (server/lookup.py, routes with ai-cache)
    call     upstream attempts with failover, through the transport
    relay    whole or streamed, translated back to the client's protocol
    account  each phase's accounting, then metrics, access line, shadow

Enter runs for every request (it finds the route); the phases after it are the
route's `Pipeline`, built when its config version is: a phase the route does
not use is not in its list. A phase returns an `Answer` to end the request
(the call phase always does; admit or lookup may earlier) or raises a
`GatewayError`; every accounting half runs after, whatever ended it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from aiohttp import web

from semproxy.cache.stores import CacheStores
from semproxy.errors import GatewayError
from semproxy.governance.plan import GovernancePlan
from semproxy.governance.pricing import Price
from semproxy.observability.observer import RequestObserver
from semproxy.protocols.registry import CHAT_COMPLETIONS, is_models, protocol_for
from semproxy.runtime.routes import RouteState, RouteTable
from semproxy.server.account import finish
from semproxy.server.admit import GovernedVersion, admission_for, reads_vars
from semproxy.server.call import CallPhase
from semproxy.server.cors import preflight
from semproxy.server.enter import enter, list_models
from semproxy.server.exchange import Answer, Exchange, request_id
from semproxy.server.lookup import CachePhase, cache_for
from semproxy.server.relay import error_response, relay
from semproxy.server.route import RoutePhase
from semproxy.server.shadow import ShadowRunner
from semproxy.transport.base import Transport

log = logging.getLogger("semproxy.proxy")


class Phase(Protocol):
    async def run(self, exchange: Exchange) -> Answer | None:
        """None: the next phase goes on. An answer: the request ends with it."""


class Accounting(Protocol):
    """A phase with an accounting half, run after every request of its route."""

    async def account(self, exchange: Exchange) -> None: ...


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A route's phases after enter, in order (the call phase last: it always answers),
    and those with an accounting half. `reads_request`: a phase reads the HTTP request
    itself (limits keyed by request variables), so the exchange carries it."""

    phases: tuple[Phase, ...]
    accounting: tuple[Accounting, ...]
    reads_request: bool = False
    cache: CachePhase | None = None  # the route's response cache (purge and explain)


def compile_pipeline(route: RouteState, transport: Transport, caches: CacheStores,
                     prices: Mapping[str, Price] | None = None,
                     governed: GovernedVersion | None = None) -> Pipeline:
    """The phases `route` uses, in order. `caches` holds the response caches that live
    across versions; `prices` the route's instance prices (what a cache hit saved);
    `governed` the version's spend governance (None: no limits anywhere)."""
    admission = admission_for(route, governed)
    cache = cache_for(route, caches, prices or {})
    phases: list[Phase] = []
    accounting: list[Accounting] = []
    if admission is not None:
        phases.append(admission)
        accounting.append(admission)
    phases.append(RoutePhase(route))
    if cache is not None:
        phases.append(cache)
        accounting.append(cache.accounting)
    phases.append(CallPhase(route, transport))
    reads = governed is not None and admission is not None \
        and reads_vars(route, governed.governor.plan)
    return Pipeline(tuple(phases), tuple(accounting), reads, cache)


@dataclass(frozen=True, slots=True)
class Version:
    """One config version as the data plane serves it: its route table, each route's
    pipeline and its governor (None without limits, budgets or prices). Swapped in
    whole, so a request keeps the version it started with."""

    table: RouteTable
    pipelines: dict[str, Pipeline]
    governed: GovernedVersion | None = None

    @classmethod
    def of(cls, table: RouteTable, transport: Transport,
           governed: GovernedVersion | None = None, caches: CacheStores | None = None
           ) -> Version:
        """`caches`: the gateway's, so entries outlive the version (a fresh set if None)."""
        caches = CacheStores() if caches is None else caches
        governance = table.config.governance
        return cls(table, {r.spec.id: compile_pipeline(r, transport, caches,
                                                       _prices(governance, r.spec.id),
                                                       governed)
                           for r in table.routes}, governed)


def _prices(governance: GovernancePlan | None, route: str) -> Mapping[str, Price]:
    policy = None if governance is None else governance.policy(route)
    return {} if policy is None else policy.prices


async def handle(request: web.Request, version: Version, observer: RequestObserver,
                 shadows: ShadowRunner | None = None) -> web.StreamResponse:
    """Serve one request and account for it (metrics, access log), whatever happens."""
    protocol = protocol_for(request.path)
    exchange = Exchange(request_id(request), protocol or CHAT_COMPLETIONS, observer)
    pipeline = None
    try:
        if is_models(request.path, request.method):
            response: web.StreamResponse = list_models(request, exchange, version.table)
        elif request.method == "OPTIONS" and (
                allowed := preflight(request, version.table)) is not None:
            response = allowed
        else:
            route = await enter(request, exchange, version.table, protocol is not None)
            pipeline = version.pipelines[route.spec.id]
            if pipeline.reads_request:
                exchange.http = request
            answer = None
            for phase in pipeline.phases:
                answer = await phase.run(exchange)
                if answer is not None:
                    break
            assert answer is not None  # the call phase always answers
            response = await relay(request, exchange, answer)
        exchange.status = response.status
        return response
    except GatewayError as exc:
        exchange.status = exc.status
        return error_response(exchange, exc)
    finally:
        if pipeline is not None and pipeline.accounting:
            await account_phases(exchange, pipeline.accounting)
        finish(exchange)
        if shadows is not None:
            shadows.after(exchange)


async def account_phases(exchange: Exchange, accounting: Sequence[Accounting]) -> None:
    """Each phase's accounting half; one that fails must not keep the others (or the
    request's metrics and access line) from running."""
    for phase in accounting:
        try:
            await phase.account(exchange)
        except Exception:  # outermost layer of the accounting: log it, account the rest
            log.exception("accounting of %s failed for request %s", type(phase).__name__,
                          exchange.request_id)
