"""The admin API, on its own listener, every call behind the `X-API-KEY` header.

Writes go through the same path as any config change (`admin/writes.py`): a
change to the stored document, made under the store's lock, validated (400
with field paths on error), persisted to the config's home (the file, edited in
place, or etcd in cluster mode) and applied by the reload watcher, so every
worker and replica converges on it.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from semproxy.admin.examples import examples_request
from semproxy.admin.limits import LimitsAPI
from semproxy.admin.playground import is_public
from semproxy.admin.reload import ConfigWatcher
from semproxy.admin.spend import SpendAPI
from semproxy.admin.writes import ConfigWriter, add_examples, delete_route, put_route
from semproxy.config.masking import mask_secrets, with_references
from semproxy.config.source import Change, ConfigSource, FileSource
from semproxy.config.spec import GatewayConfig, admin_refusal, is_loopback
from semproxy.errors import (
    BadRequestError,
    ForbiddenError,
    NotFoundError,
    UnauthorizedError,
)
from semproxy.protocols.body import parse_object
from semproxy.runtime.routes import RouteState
from semproxy.semantic.explain import explain_with
from semproxy.semantic.query import prompt_input, routing_input
from semproxy.server.app import Gateway, error_middleware, json_response
from semproxy.server.cache_admin import explain_cache, purge

log = logging.getLogger("semproxy.admin")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def browser_refusal(request: web.Request, is_keyless: bool) -> str | None:
    """Why a request that a web page may have sent is refused, or None.

    A page on another site can make the browser call the admin listener; the
    browser then marks it with `Origin` (and `Sec-Fetch-Site`). Those are refused
    whatever the key. Without a key, a page can also point its own host name at
    127.0.0.1 (DNS rebinding) and be same-origin with it: the keyless admin
    therefore answers only to a loopback name in `Host`.
    """
    host = request.headers.get("Host", "")
    origin = request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
        return "cross-origin requests to the admin API are refused"
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return "cross-site requests to the admin API are refused"
    if is_keyless and not is_loopback_host(host):
        return "the keyless admin API answers only to a loopback Host (127.0.0.1, localhost)"
    return None


def is_loopback_host(host: str) -> bool:
    try:
        name = urlsplit(f"//{host}").hostname or ""
    except ValueError:
        return False
    return name == "localhost" or is_loopback(f"{name}:0")


def check_admin_settings(config: GatewayConfig) -> str | None:
    """Why the admin listener must not start, or None when it may."""
    if config.admin is None:
        return "no admin section"
    return admin_refusal(config.admin)


class AdminAPI:
    def __init__(self, gateway: Gateway, watcher: ConfigWatcher, store: ConfigSource,
                 metrics: Callable[[], Awaitable[tuple[bytes, str]]] | None = None) -> None:
        self.gateway = gateway
        self.watcher = watcher
        self.writer = ConfigWriter(gateway, watcher, store)
        self.metrics = metrics

    def key_middleware(self) -> Middleware:
        @web.middleware
        async def require_key(request: web.Request, handler: Handler) -> web.StreamResponse:
            if is_public(request):  # the playground page's files; its data calls need the key
                return await handler(request)
            # Read the admin settings of the live version on every call: a reload
            # may have rotated the key.
            config = self.gateway.config
            admin = config.admin
            expected = (admin.key if admin else None) or ""
            given = request.headers.get("X-API-KEY", "")
            if not expected and check_admin_settings(config) is not None:
                raise UnauthorizedError("the admin API has no key configured")
            refusal = browser_refusal(request, is_keyless=not expected)
            if refusal is not None:
                raise ForbiddenError(refusal)
            if expected and not hmac.compare_digest(given.encode(), expected.encode()):
                raise UnauthorizedError("missing or wrong X-API-KEY")
            return await handler(request)

        return require_key

    def app(self) -> web.Application:
        app = web.Application(middlewares=[error_middleware, self.key_middleware()])
        r = app.router
        r.add_get("/admin/config", self.get_config)
        r.add_get("/admin/routes", self.list_routes)
        r.add_get("/admin/routes/{id}", self.get_route)
        r.add_put("/admin/routes/{id}", self.put_route)
        r.add_delete("/admin/routes/{id}", self.delete_route)
        r.add_post("/admin/reload", self.reload)
        r.add_post("/admin/routes/{id}/explain", self.explain)
        r.add_post("/admin/routes/{id}/examples", self.add_examples)
        r.add_delete("/admin/cache", self.purge_cache)
        r.add_get("/metrics", self.get_metrics)
        SpendAPI(self.gateway).mount(app)
        LimitsAPI(self).mount(app)
        return app

    async def get_config(self, request: web.Request) -> web.Response:
        return json_response({"version": self.gateway.config.version,
                              "config": self._shown_config()})

    def _shown_config(self) -> Any:
        """The live config as an admin reads it: defaults filled in, values from the
        environment shown as written, credentials masked."""
        config = self.gateway.config
        effective = config.raw.model_dump(mode="json", by_alias=True, exclude_none=True)
        return mask_secrets(with_references(effective, dict(config.document)))

    async def list_routes(self, request: web.Request) -> web.Response:
        table = self.gateway.table
        return json_response({"version": table.version,
                              "routes": [route_summary(r) for r in table.routes]})

    async def get_route(self, request: web.Request) -> web.Response:
        """One route: its summary, and its config as GET /admin/config shows it (send
        that back with PUT to change it)."""
        route_id = request.match_info["id"]
        route = self.gateway.table.by_id.get(route_id)
        shown = next((r for r in self._shown_config().get("routes", [])
                      if r.get("id") == route_id), None)
        if route is None or shown is None:
            raise NotFoundError(f"no route with id {route_id!r}")
        return json_response({"version": self.gateway.table.version,
                              "route": route_summary(route), "config": shown})

    async def _write(self, change: Change) -> web.Response:
        written = await self.writer.write(change)
        if written is None:
            return json_response({"version": self.gateway.config.version, "applied": False,
                                  "warnings": []})
        return json_response(written)

    async def write_edit(self, change: Change) -> dict[str, Any]:
        """One change at one path of the stored document (admin/limits.py), written the
        way every admin write is: {version, applied, warnings, in_place}; `in_place`
        says a config file was edited with its comments kept (etcd holds a document)."""
        written = await self.writer.write(change)
        if written is None:
            written = {"version": self.gateway.config.version, "applied": False,
                       "warnings": []}
        return {**written, "in_place": isinstance(self.writer.store, FileSource)}

    async def put_route(self, request: web.Request) -> web.Response:
        """Replace the route with this id where it stands in the config, or add it.

        The answer carries the new version's warnings: a route that takes paths
        from another one (a longer prefix inside a shorter one) is among them.
        """
        route = parse_object(await request.read())
        route["id"] = request.match_info["id"]
        return await self._write(put_route(route, self.writer.allowed_env))

    async def delete_route(self, request: web.Request) -> web.Response:
        return await self._write(delete_route(request.match_info["id"]))

    async def reload(self, request: web.Request) -> web.Response:
        """Read the source now: 200 when it holds a valid version (applied if new),
        400 with field paths when it is invalid, 503 when it cannot be read."""
        result = await self.watcher.reload()
        code = 503 if not result.source_ok else 400 if result.errors else 200
        return json_response({"version": self.gateway.table.version, "applied": result.applied,
                              "failed": result.failed, "errors": result.errors},
                             status=code)

    async def explain(self, request: web.Request) -> web.Response:
        """The routing decision (semantic routes) and what the response cache would do
        (routes with ai-cache) for `prompt` or `messages`; optional `consumer`,
        `headers` (as the request would send them) and `instance` (the one that serves:
        the semantic pick, else the route's first)."""
        route = self.gateway.table.by_id.get(request.match_info["id"])
        if route is None:
            raise NotFoundError(f"no route with id {request.match_info['id']!r}")
        phase = self.gateway.version.pipelines[route.spec.id].cache
        if route.semantic is None and phase is None:
            raise BadRequestError("this route uses neither semantic balancing nor a cache")
        body = parse_object(await request.read())
        messages = body.get("messages")
        if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
            query = routing_input(body)
            payload = {k: v for k, v in body.items() if k not in EXPLAIN_FIELDS}
        elif isinstance(body.get("prompt"), str):
            query = prompt_input(body["prompt"])
            payload = {"model": body.get("model", "auto"),
                       "messages": [{"role": "user", "content": body["prompt"]}]}
        else:
            raise BadRequestError("give 'prompt' (string) or 'messages' (array of objects)")
        result: dict[str, Any] = {"route": route.spec.id}
        if route.semantic is not None:
            if isinstance(messages, list):
                query = route.semantic.query(messages, query)
            result = await explain_with(route.semantic, query)
        if phase is not None:
            instance = explain_instance(body, result, route.spec.instances[0].name,
                                        {i.name for i in route.spec.instances})
            consumer, headers = explain_request(body)
            result["cache"] = await explain_cache(phase, payload, instance, consumer, headers)
        return json_response(result)

    async def purge_cache(self, request: web.Request) -> web.Response:
        """Remove cached answers: `?route=ID`, `?consumer=NAME`, both, or neither (all)."""
        route, consumer = request.query.get("route"), request.query.get("consumer")
        removed = await purge(self.gateway.version, route, consumer)
        log.info("cache purged (route %s, consumer %s): %d keys", route or "*",
                 consumer or "*", removed)
        return json_response({"removed": removed, "route": route, "consumer": consumer})

    async def add_examples(self, request: web.Request) -> web.Response:
        """Append examples to one instance of a semantic route: {"instance", "examples"}.

        The new config goes through the same validation and reload as any admin
        write (an instance over 64 examples is a 400 naming the field); a config
        file is edited in place, comments kept. Examples the instance already has
        are skipped, not doubled.
        """
        route_id = request.match_info["id"]
        instance, texts = examples_request(parse_object(await request.read()))
        live = self.gateway.table.by_id.get(route_id)
        if live is None:
            raise NotFoundError(f"no route with id {route_id!r}")
        if live.semantic is None:
            raise BadRequestError("this route does not use semantic balancing")
        added: list[str] = []
        written = await self.writer.write(
            add_examples(route_id, instance, texts, self.writer.allowed_env, added))
        instances = [i for r in self.gateway.config.routes if r.id == route_id
                     for i in r.instances if i.name == instance]
        count = len(instances[0].examples) if instances else 0
        if written is None:
            written = {"version": self.gateway.config.version, "applied": False, "warnings": []}
        return json_response({**written, "added": added, "examples": count})

    async def get_metrics(self, request: web.Request) -> web.Response:
        if self.metrics is None:
            raise NotFoundError("metrics are not enabled")
        body, content_type = await self.metrics()
        return web.Response(body=body, headers={"Content-Type": content_type})


EXPLAIN_FIELDS = frozenset({"prompt", "consumer", "headers", "instance"})


def explain_instance(body: dict[str, Any], decided: dict[str, Any], first: str,
                     names: set[str]) -> str:
    """The instance an explained request is served by: the one asked, the semantic pick,
    else the route's first."""
    asked = body.get("instance")
    if asked is not None and asked not in names:
        raise BadRequestError(f"instance: the route has no instance {asked!r}")
    pick = decided.get("pick")
    return asked if isinstance(asked, str) else pick if isinstance(pick, str) else first


def explain_request(body: dict[str, Any]) -> tuple[str | None, dict[str, str]]:
    """The `consumer` and `headers` an explained request is made with."""
    consumer, headers = body.get("consumer"), body.get("headers") or {}
    if consumer is not None and not isinstance(consumer, str):
        raise BadRequestError("consumer: must be a string")
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise BadRequestError("headers: must be an object of strings")
    return consumer, headers


def route_summary(route: RouteState) -> dict[str, Any]:
    spec = route.spec
    return {"id": spec.id, "uri": spec.uri + ("*" if spec.is_prefix else ""),
            "algorithm": spec.algorithm, "instances": [i.name for i in spec.instances],
            "health": route.health.snapshot(),
            **({"cache": spec.cache.mode} if spec.cache is not None else {})}
