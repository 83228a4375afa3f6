"""The admin API, on its own listener, every call behind the `X-API-KEY` header.

Writes go through the same path as any config change: the new document is
validated (400 with field paths on error), persisted to the config's home (the
file, or etcd in cluster mode) and applied by the reload watcher, so every
worker and replica converges on it.
"""

from __future__ import annotations

import asyncio
import copy
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from semproxy.admin.examples import examples_request, write_in_place
from semproxy.admin.playground import is_public
from semproxy.admin.reload import ConfigWatcher
from semproxy.config.loader import load_data
from semproxy.config.masking import (
    MASK,
    mask_secrets,
    masked_paths,
    restore_masked,
    with_references,
)
from semproxy.config.secrets import variables_outside_credentials
from semproxy.config.source import FileSource, SourceError
from semproxy.config.spec import GatewayConfig, admin_refusal, is_loopback
from semproxy.errors import (
    BadRequestError,
    ConfigError,
    ConfigRejected,
    ForbiddenError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
)
from semproxy.protocols.body import parse_object
from semproxy.semantic.explain import explain_with
from semproxy.semantic.query import prompt_input, routing_input
from semproxy.server.app import Gateway, error_middleware, json_response

log = logging.getLogger("semproxy.admin")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ConfigStore(Protocol):
    """Where admin writes are persisted (file or etcd)."""

    async def save(self, document: dict[str, Any]) -> None: ...


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
    def __init__(self, gateway: Gateway, watcher: ConfigWatcher, store: ConfigStore,
                 metrics: Callable[[], tuple[bytes, str]] | None = None) -> None:
        self.gateway = gateway
        self.watcher = watcher
        self.store = store
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
        r.add_put("/admin/routes/{id}", self.put_route)
        r.add_delete("/admin/routes/{id}", self.delete_route)
        r.add_post("/admin/reload", self.reload)
        r.add_post("/admin/routes/{id}/explain", self.explain)
        r.add_post("/admin/routes/{id}/examples", self.add_examples)
        r.add_get("/metrics", self.get_metrics)
        return app

    async def get_config(self, request: web.Request) -> web.Response:
        config = self.gateway.config
        effective = config.raw.model_dump(mode="json", by_alias=True, exclude_none=True)
        shown = mask_secrets(with_references(effective, dict(config.document)))
        return json_response({"version": config.version, "config": shown})

    async def list_routes(self, request: web.Request) -> web.Response:
        table = self.gateway.table
        return json_response({"version": table.version, "routes": [
            {"id": r.spec.id, "uri": r.spec.uri + ("*" if r.spec.is_prefix else ""),
             "algorithm": r.spec.algorithm,
             "instances": [i.name for i in r.spec.instances],
             "health": r.health.snapshot()}
            for r in table.routes]})

    async def _write(self, document: dict[str, Any]) -> web.Response:
        return json_response(await self._apply(document))

    async def _apply(self, document: dict[str, Any]) -> dict[str, Any]:
        """Validate, persist and reload a whole document: {version, applied}."""
        try:
            # Off the event loop: building reads files (TLS bundles) and may take a while.
            config = await asyncio.to_thread(load_data, document)
        except ConfigError as exc:
            raise ConfigRejected(exc.errors) from exc
        except Exception as exc:
            # A document that breaks a builder in a way no check foresaw is still
            # the client's bad input: 400, and the running version stays.
            log.exception("admin write rejected: the config could not be built")
            raise ConfigRejected([f"<root>: the config could not be built "
                                  f"({type(exc).__name__})"]) from exc
        try:
            await self.store.save(document)
        except SourceError as exc:
            raise UnavailableError(f"config store unavailable: {exc}") from exc
        await self.watcher.reload()
        return {"version": config.version,
                "applied": self.gateway.config.fingerprint == config.fingerprint}

    async def put_route(self, request: web.Request) -> web.Response:
        route_id = request.match_info["id"]
        route = parse_object(await request.read())
        route["id"] = route_id
        document = copy.deepcopy(dict(self.gateway.config.document))
        stored = [r for r in document.get("routes", []) if r.get("id") == route_id]
        routes = [r for r in document.get("routes", []) if r.get("id") != route_id]
        route = checked_route(route, stored[0] if stored else None, f"routes[{len(routes)}]")
        document["routes"] = [*routes, route]
        return await self._write(document)

    async def delete_route(self, request: web.Request) -> web.Response:
        route_id = request.match_info["id"]
        document = copy.deepcopy(dict(self.gateway.config.document))
        routes = document.get("routes", [])
        if not any(r.get("id") == route_id for r in routes):
            raise NotFoundError(f"no route with id {route_id!r}")
        document["routes"] = [r for r in routes if r.get("id") != route_id]
        return await self._write(document)

    async def reload(self, request: web.Request) -> web.Response:
        """Read the source now: 200 when it holds a valid version (applied if new),
        400 with field paths when it is invalid, 503 when it cannot be read."""
        status = await self.watcher.reload()
        code = 503 if not status.source_ok else 400 if status.last_error else 200
        return json_response({"version": self.gateway.table.version, "applied": status.applied,
                              "failed": status.failed, "errors": status.last_error},
                             status=code)

    async def explain(self, request: web.Request) -> web.Response:
        route = self.gateway.table.by_id.get(request.match_info["id"])
        if route is None:
            raise NotFoundError(f"no route with id {request.match_info['id']!r}")
        if route.semantic is None:
            raise BadRequestError("this route does not use semantic balancing")
        body = parse_object(await request.read())
        messages = body.get("messages")
        if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
            query = route.semantic.query(messages, routing_input(body))
        elif isinstance(body.get("prompt"), str):
            query = prompt_input(body["prompt"])
        else:
            raise BadRequestError("give 'prompt' (string) or 'messages' (array of objects)")
        return json_response(await explain_with(route.semantic, query))

    async def add_examples(self, request: web.Request) -> web.Response:
        """Append examples to one instance of a semantic route: {"instance", "examples"}.

        The new config goes through the same validation and reload as any admin
        write (an instance over 64 examples is a 400 naming the field). A config
        file is edited in place, comments kept; etcd (or a file shape the edit
        cannot handle) gets the whole document. Examples the instance already
        has are skipped, not doubled.
        """
        route_id = request.match_info["id"]
        instance, texts = examples_request(parse_object(await request.read()))
        document = copy.deepcopy(dict(self.gateway.config.document))
        route = next((r for r in document.get("routes", []) if r.get("id") == route_id), None)
        if route is None:
            raise NotFoundError(f"no route with id {route_id!r}")
        live = self.gateway.table.by_id.get(route_id)
        if live is None or live.semantic is None:
            raise BadRequestError("this route does not use semantic balancing")
        multi = route.get("plugins", {}).get("ai-proxy-multi", {})
        target = next((i for i in multi.get("instances", []) if i.get("name") == instance), None)
        if target is None:
            raise BadRequestError(f"route {route_id!r} has no instance {instance!r}")
        have = list(target.get("examples") or [])
        added = [t for t in dict.fromkeys(texts) if t not in have]
        if not added:
            return json_response({"version": self.gateway.config.version, "applied": False,
                                  "added": [], "examples": len(have)})
        target["examples"] = [*have, *added]
        config = None
        if isinstance(self.store, FileSource):  # keep the file's comments when its shape allows
            try:
                config = await write_in_place(self.store.path, route_id, {instance: added})
            except ConfigError as exc:
                raise ConfigRejected(exc.errors) from exc
        if config is None:
            applied = await self._apply(document)
        else:
            await self.watcher.reload()
            applied = {"version": config.version,
                       "applied": self.gateway.config.fingerprint == config.fingerprint}
        return json_response({**applied, "added": added, "examples": len(target["examples"])})

    async def get_metrics(self, request: web.Request) -> web.Response:
        if self.metrics is None:
            raise NotFoundError("metrics are not enabled")
        body, content_type = self.metrics()
        return web.Response(body=body, headers={"Content-Type": content_type})


def checked_route(route: dict[str, Any], stored: Any, path: str) -> dict[str, Any]:
    """A route sent over the admin API, with masked credentials given back their stored
    values; refused when a mask stands for nothing or `${VAR}` is outside credentials."""
    if stored is not None:
        route = restore_masked(route, stored)
    problems = [f"{where}: {MASK} stands for a stored credential, but there is none here; "
                "give the value" for where in masked_paths(route, path)]
    problems += variables_outside_credentials(route, path)
    if problems:
        raise ConfigRejected(problems)
    return route
