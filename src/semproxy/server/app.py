"""The gateway application: one aiohttp app per worker, holding the live config version.

`Gateway` owns the transport, the request observer, the shadow runner and the
current `Version` (route table, with its active health checkers and embedder
pool, and each route's pipeline); swapping it is a single attribute
assignment, so a request keeps the version it started with.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web
from aiohttp.web_urldispatcher import _default_expect_handler

from semproxy.cache.stores import CacheStores
from semproxy.config.spec import GatewayConfig
from semproxy.errors import (
    GatewayError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
)
from semproxy.observability.metrics import Metrics
from semproxy.observability.observer import RequestObserver, SilentObserver
from semproxy.protocols.count_tokens import LOCAL_SCHEME, LocalTokenCounter
from semproxy.protocols.registry import protocol_for
from semproxy.runtime.compile import compile_table
from semproxy.runtime.routes import RouteTable
from semproxy.semantic.router import strong_readiness
from semproxy.server.governing import Governance
from semproxy.server.listener import ANSWER_HEADERS
from semproxy.server.pipeline import Version, handle
from semproxy.server.shadow import ShadowRunner
from semproxy.transport.base import Transport
from semproxy.transport.pool import check_pool_guard
from semproxy.transport.schemes import SchemeTransport

log = logging.getLogger("semproxy.server")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Above every route's own max_req_body_size: the handler enforces the per-route
# limit while reading, so aiohttp's global cap must never fire first.
CLIENT_MAX_SIZE = 1 << 40


class Gateway:
    def __init__(self, config: GatewayConfig, observer: RequestObserver | None = None,
                 transport: Transport | None = None) -> None:
        self.transport: Transport = transport or SchemeTransport(
            local={LOCAL_SCHEME: LocalTokenCounter()})
        self.observer: RequestObserver = observer or SilentObserver()
        self.governance = Governance()
        self.caches = CacheStores()  # response caches: they outlive config versions
        self.version = self._compile(config)
        self.governance.current = self.version.governed
        self.shadows = ShadowRunner()

    def _compile(self, config: GatewayConfig) -> Version:
        table = compile_table(config, self.transport, self.observer)
        return Version.of(table, self.transport, self.governance.prepare(config.governance),
                          self.caches)

    @property
    def table(self) -> RouteTable:
        return self.version.table

    @property
    def config(self) -> GatewayConfig:
        return self.table.config

    async def start(self) -> None:
        """Check the upstream pool guard, warm the first table and start its health checks."""
        await check_pool_guard()  # fail at start, not on the first hostile upstream
        await self.table.warm()
        self.table.start_checks()

    async def apply(self, config: GatewayConfig) -> None:
        """Build the new version completely (reference vectors included), then swap.

        The new table's health checks start before the swap; the old table's stop
        after it. Health state is per version: the new one starts all healthy.
        """
        version = self._compile(config)
        await version.table.warm()
        version.table.start_checks()
        old, self.version = self.version, version
        self.governance.activate(version.governed, config.shutdown_grace_s)
        await old.table.stop_checks()
        await self.caches.retain(r.spec.cache for r in version.table.routes if r.spec.cache)
        log.info("config version %s active (%d routes)", config.version, len(config.routes))

    def report(self, metrics: Metrics) -> None:
        """Push scrape-time state (config version, breakers, health) into the metrics."""
        metrics.on_config(self.table.version)
        metrics.on_tasks(len(asyncio.all_tasks()))
        metrics.on_breakers((name, b.state) for name, b in self.table.pool.breakers.items())
        metrics.on_strong_shed(sum(w.shed for w in self.table.pool.strong_workers))
        for route in self.table.routes:
            metrics.on_health_snapshot(route.spec.id, route.health.snapshot())
        metrics.on_counts(self.governance.counts())
        held, entries, evictions = self.caches.memory_held()
        faults = sum(c.backend.faults for c in self.caches.all())
        metrics.cache_metrics.on_state(held, entries, evictions, faults, self.caches.dropped)

    async def proxy(self, request: web.Request) -> web.StreamResponse:
        return await handle(request, self.version, self.observer, self.shadows)

    async def aclose(self) -> None:
        await self.shadows.aclose()
        await self.caches.aclose()
        await self.table.stop_checks()
        await self.governance.aclose()
        await self.transport.aclose()


def json_response(data: object, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


_ROUTER_ERRORS: dict[int, type[GatewayError]] = {
    404: NotFoundError, 405: MethodNotAllowedError, 413: PayloadTooLargeError}


async def answer_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure leaves as an OpenAI-shaped JSON error; never a traceback.

    The request path renders its own errors in the client's protocol
    (`relay.error_response`); this catches what escapes any handler."""
    try:
        return await handler(request)
    except GatewayError as exc:
        return web.Response(body=exc.body(), status=exc.status, content_type="application/json")
    except web.HTTPException as exc:  # the router's own answers: no such path, method
        err = _ROUTER_ERRORS.get(exc.status, GatewayError)(
            f"no {request.method} {request.path} here" if exc.status == 404 else exc.reason)
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return web.Response(body=err.body(), status=exc.status, headers=allow,
                            content_type="application/json")
    except Exception:  # outermost layer: log it, answer 500 without internals
        log.exception("unhandled error on %s", request.path)
        err = GatewayError("internal gateway error")
        return web.Response(body=err.body(), status=500, content_type="application/json")


error_middleware = web.middleware(answer_errors)


async def stamp_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare` hook of every listener (public and admin)."""
    response.headers.update(ANSWER_HEADERS)


def expect_continue(gateway: Gateway) -> Callable[[web.Request], Awaitable[web.Response | None]]:
    """`Expect: 100-continue` is answered only once the body could be accepted.

    aiohttp sends `100 Continue` before any handler runs, so a client would upload
    a body the route then refuses. Here an unknown route gets no interim answer
    (the handler answers 404 without reading), and a declared length over the
    route's `max_req_body_size` gets its 413 at once.
    """
    async def on_expect(request: web.Request) -> web.Response | None:
        try:
            route = gateway.table.match(request.path, request.method)
        except GatewayError:
            return None
        if route.spec.is_prefix and protocol_for(request.path) is None:
            return None  # an unknown endpoint: answered 404 without reading
        declared = request.content_length
        if declared is not None and declared > route.spec.max_body:
            err = PayloadTooLargeError(f"request body of {declared} bytes exceeds the limit "
                                       f"of {route.spec.max_body}")
            return web.Response(body=err.body(), status=err.status,
                                content_type="application/json", headers={"Connection": "close"})
        await _default_expect_handler(request)  # aiohttp's own interim answer (or 417)
        return None
    return on_expect


def guarded(handler: Handler) -> Handler:
    """`handler` with `answer_errors` around it, for an app without middlewares.

    The public app has a single catch-all route, so wrapping that one handler
    does what the middleware does, without aiohttp's per-request middleware
    chain on the hot path.
    """
    async def guarded_handler(request: web.Request) -> web.StreamResponse:
        return await answer_errors(request, handler)
    return guarded_handler


def build_app(gateway: Gateway, is_source_ok: Callable[[], bool] | None = None
              ) -> web.Application:
    """The public app. `is_source_ok` tells /healthz whether the config source answers.

    A replica whose source is down still serves its last good version, so /healthz
    stays 200 and only reports `config_source: unavailable`; a load balancer must
    not take every replica out because etcd is away.
    """
    # The keep-alive timeout is read once, here: a reload does not touch open sockets.
    app = web.Application(client_max_size=CLIENT_MAX_SIZE,
                          handler_args={"max_field_size": 16384, "keepalive_timeout":
                                        gateway.config.client_keepalive_timeout_s})

    async def healthz(request: web.Request) -> web.Response:
        body = {"status": "ok", "version": gateway.table.version}
        if is_source_ok is not None:
            body["config_source"] = "ok" if is_source_ok() else "unavailable"
        # model: accurate: not ready until its strong stage is; serving without it is degraded.
        strong = strong_readiness(gateway.table.semantic_routers())
        if strong is not None:
            body["strong_stage"] = strong
            body["status"] = {"ready": "ok", "loading": "starting", "failed": "degraded"}[strong]
        return json_response(body, 503 if strong == "loading" else 200)

    async def on_cleanup(app: web.Application) -> None:
        await gateway.aclose()

    app.router.add_get("/healthz", guarded(healthz))
    app.router.add_route("*", "/{tail:.*}", guarded(gateway.proxy),
                         expect_handler=expect_continue(gateway))
    app.on_response_prepare.append(stamp_headers)
    app.on_cleanup.append(on_cleanup)
    return app
