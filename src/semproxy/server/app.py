"""The gateway application: one aiohttp app per worker, holding the live route table.

`Gateway` owns the shared HTTP client, the embedder pool, the request observer
and the current `RouteTable` with its active health checkers; swapping the table
is a single attribute assignment, so a request keeps the version it started with.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web, web_protocol
from aiohttp.web_urldispatcher import _default_expect_handler

from semproxy.config.runtime import GatewayConfig
from semproxy.embeddings.factory import EmbedderPool
from semproxy.errors import GatewayError, PayloadTooLargeError
from semproxy.observability.metrics import Metrics
from semproxy.observability.observer import RequestObserver, SilentObserver
from semproxy.providers.http import HttpClients
from semproxy.semantic.router import strong_readiness
from semproxy.server.handler import REQUEST_ID, handle
from semproxy.server.routes import RouteTable
from semproxy.server.shadow import ShadowRunner

log = logging.getLogger("semproxy.server")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Above every route's own max_req_body_size: the handler enforces the per-route
# limit while reading, so aiohttp's global cap must never fire first.
CLIENT_MAX_SIZE = 1 << 40


class Gateway:
    def __init__(self, config: GatewayConfig,
                 observer: RequestObserver | None = None) -> None:
        self.clients = HttpClients()
        self.observer: RequestObserver = observer or SilentObserver()
        self.table = RouteTable(config, self._pool(), self.observer)
        self.shadows = ShadowRunner(self.observer)

    def _pool(self) -> EmbedderPool:
        return EmbedderPool(self.clients, self.observer.on_embedding_cache)

    @property
    def config(self) -> GatewayConfig:
        return self.table.config

    async def start(self) -> None:
        """Warm the first table and start its active health checks."""
        await self.table.warm()
        self.table.start_checks()

    async def apply(self, config: GatewayConfig) -> None:
        """Build the new version completely (reference vectors included), then swap.

        The new table's health checks start before the swap; the old table's stop
        after it. Health state is per version: the new one starts all healthy.
        """
        table = RouteTable(config, self._pool(), self.observer)
        await table.warm()
        table.start_checks()
        old, self.table = self.table, table
        await old.stop_checks()
        log.info("config version %s active (%d routes)", config.version, len(config.routes))

    def report(self, metrics: Metrics) -> None:
        """Push scrape-time state (config version, breakers, health) into the metrics."""
        metrics.on_config(self.table.version)
        metrics.on_tasks(len(asyncio.all_tasks()))
        metrics.on_breakers((name, b.state) for name, b in self.table.pool.breakers.items())
        metrics.on_strong_shed(sum(w.shed for w in self.table.pool.strong_workers))
        for route in self.table.routes:
            metrics.on_health_snapshot(route.spec.id, route.health.snapshot())

    async def proxy(self, request: web.Request) -> web.StreamResponse:
        return await handle(request, self.table, self.clients, self.observer, self.shadows)

    async def aclose(self) -> None:
        await self.shadows.aclose()
        await self.table.stop_checks()
        await self.clients.aclose()


def json_response(data: object, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


async def answer_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure leaves as an OpenAI-shaped JSON error; never a traceback."""
    try:
        return await handler(request)
    except GatewayError as exc:
        rid = request.get(REQUEST_ID)
        return web.Response(body=exc.body(), status=exc.status, content_type="application/json",
                            headers={"X-Request-Id": rid} if rid else None)
    except web.HTTPException as exc:
        err = GatewayError(exc.reason)
        return web.Response(body=err.body(), status=exc.status,
                            content_type="application/json")
    except Exception:  # outermost layer: log it, answer 500 without internals
        log.exception("unhandled error on %s", request.path)
        err = GatewayError("internal gateway error")
        return web.Response(body=err.body(), status=500, content_type="application/json")


error_middleware = web.middleware(answer_errors)

# Every answer names the gateway without versions (aiohttp's default banner is
# `Python/3.11 aiohttp/3.x`: a free hint for anyone matching known flaws), and no
# browser may guess a JSON error or an event stream to be HTML.
ANSWER_HEADERS = {"Server": "semproxy", "X-Content-Type-Options": "nosniff"}


def stamp_library_answers() -> None:
    """Answers aiohttp writes itself before any route runs (a malformed request line
    or header: 400) skip `on_response_prepare`; its `RequestHandler.handle_error`
    builds them, so it is wrapped once per process to add the same headers. The
    wrapper only adds headers to the response the library built."""
    handler = web_protocol.RequestHandler
    original = getattr(handler, "handle_error", None)
    if original is None:
        raise RuntimeError("aiohttp's RequestHandler.handle_error is gone: check how this "
                           "aiohttp version answers requests it cannot parse")
    if getattr(original, "semproxy_stamped", False):
        return

    def handle_error(self: Any, *args: Any, **kwargs: Any) -> web.StreamResponse:
        response: web.StreamResponse = original(self, *args, **kwargs)
        response.headers.update(ANSWER_HEADERS)
        return response

    handle_error.semproxy_stamped = True  # type: ignore[attr-defined]
    handler.handle_error = handle_error  # type: ignore[method-assign]


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
    stamp_library_answers()
    app.on_cleanup.append(on_cleanup)
    return app
