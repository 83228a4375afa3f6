"""enter: which route, which consumer, and the request parsed in the client's protocol.

The first phase of every request, before any route-specific phase runs: the
route is matched by path and method, the consumer authenticated (key-auth),
the body read within its size limit and deadline and parsed by the client
protocol the path names. A chash route's hash key, and the few headers a
response cache reads, are taken here too, while the HTTP request is at hand;
later phases read only the `Exchange`.
`GET .../models` ends here, answered from the route's config.
"""

from __future__ import annotations

import orjson
from aiohttp import web

from semproxy.config.cache import AICache
from semproxy.protocols.models import anthropic_list, openai_list
from semproxy.runtime.routes import RouteState, RouteTable
from semproxy.server.auth import authenticate
from semproxy.server.exchange import Exchange
from semproxy.server.hashkey import hash_key, request_var
from semproxy.server.request import read_body


async def enter(request: web.Request, exchange: Exchange, table: RouteTable) -> RouteState:
    route = exchange.route = table.match(request.path, request.method)
    spec = route.spec
    exchange.consumer = authenticate(request, spec, table.config.consumers)
    parsed = exchange.parsed = exchange.protocol.parse(await read_body(
        request, spec.max_body, table.config.client_body_timeout_s))
    # The model as the client wrote it: the instance's configured one can come from
    # the environment (`options.model: ${VAR}`) and has no place in every log line.
    model = parsed.payload.get("model")
    exchange.model = model if isinstance(model, str) else None
    if spec.algorithm == "chash":
        exchange.hash_key = hash_key(request, spec.hash_on, spec.key, exchange.consumer)
    if spec.cache is not None:
        exchange.cache_headers, exchange.cache_vars = cache_inputs(request, spec.cache)
    return route


CACHE_HEADERS = ("Cache-Control", "Pragma")


def cache_inputs(request: web.Request, conf: AICache) -> tuple[dict[str, str], dict[str, str]]:
    """The headers the response cache reads (its client controls and `bypass_on` rules)
    and the values of its `cache_key.include_vars`: nothing else of the request."""
    names = [*CACHE_HEADERS, *(r.header for r in conf.bypass_on)] if conf.bypass_on \
        else CACHE_HEADERS
    headers = {}
    given = request.headers
    for name in names:  # a loop, not a comprehension: no function call (most find none)
        value = given.get(name)
        if value is not None:
            headers[name] = value
    variables = conf.cache_key.include_vars
    return headers, {n: request_var(request, n) for n in variables} if variables else {}


def list_models(request: web.Request, exchange: Exchange, table: RouteTable) -> web.Response:
    """The route's models, in the list shape of the SDK that asks."""
    route = exchange.route = table.find(request.path)
    exchange.consumer = authenticate(request, route.spec, table.config.consumers)
    is_anthropic = "anthropic-version" in request.headers
    body = anthropic_list(route.spec) if is_anthropic else openai_list(route.spec)
    return web.Response(body=orjson.dumps(body), content_type="application/json",
                        headers={"X-Request-Id": exchange.request_id})
