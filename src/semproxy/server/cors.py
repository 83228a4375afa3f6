"""CORS on the request path: the headers a browser needs, and the preflight's answer.

A route with the `cors` plugin (`config/cors.py`) answers `OPTIONS` itself,
before key-auth (a browser's preflight carries no credentials), whatever its
`methods`; every other answer on it carries the CORS headers when the
request's origin is allowed. They are worked out once, when the route is
found, and added to `Exchange.headers`, which every answer carries (an error
or a stream included); a later phase adds its own headers to that dict.
"""

from __future__ import annotations

from aiohttp import web

from semproxy.config.cors import CorsSpec
from semproxy.runtime.routes import RouteTable
from semproxy.server.exchange import Exchange


def cors_headers(spec: CorsSpec, request: web.Request) -> dict[str, str] | None:
    """The CORS headers of an answer to `request`; None when its origin is not allowed."""
    origin = spec.allowed_origin(request.headers.get("Origin"))
    if origin is None:
        return None
    headers = {"Access-Control-Allow-Origin": origin,
               "Access-Control-Allow-Methods": spec.methods,
               "Access-Control-Expose-Headers": spec.expose,
               "Access-Control-Max-Age": spec.max_age}
    if origin != "*":
        headers["Vary"] = "Origin"  # the answer differs by origin: caches must know
    allowed = spec.headers if spec.headers is not None else \
        request.headers.get("Access-Control-Request-Headers", "")
    if allowed:
        headers["Access-Control-Allow-Headers"] = allowed
    if spec.credentials:
        headers["Access-Control-Allow-Credentials"] = "true"
    return headers


def allow_cross_origin(request: web.Request, exchange: Exchange, spec: CorsSpec | None) -> None:
    """Add the route's CORS headers to every answer of `exchange` (none without the plugin)."""
    if spec is not None and (headers := cors_headers(spec, request)) is not None:
        exchange.headers = {**(exchange.headers or {}), **headers}


def preflight(request: web.Request, table: RouteTable) -> web.Response | None:
    """The answer to an `OPTIONS` request on a route with CORS; None on any other route
    (it is then matched as any request is, and usually refused: 405)."""
    spec = table.find(request.path).spec.cors
    if spec is None:
        return None
    return web.Response(status=200, headers=cors_headers(spec, request))
