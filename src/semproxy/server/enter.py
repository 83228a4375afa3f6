"""enter: which route, which consumer, and the request parsed in the client's protocol.

The first phase of every request, before any route-specific phase runs: the
route is matched by path and method, the consumer authenticated (key-auth),
the body read within its size limit and deadline and parsed by the client
protocol the path names. A chash route's hash key, and the few headers a
response cache reads, are taken here too, while the HTTP request is at hand;
later phases read only the `Exchange`.
`GET .../models` and `GET .../models/{id}` end here, answered from the route's
config.
"""

from __future__ import annotations

import orjson
from aiohttp import web

from semproxy.config.cache import AICache
from semproxy.errors import NotFoundError
from semproxy.protocols.models import (
    AUTO,
    anthropic_list,
    anthropic_model,
    model_ids,
    not_found,
    openai_list,
    openai_model,
)
from semproxy.protocols.registry import unnamed_protocol
from semproxy.runtime.routes import RouteState, RouteTable
from semproxy.server.auth import authenticate
from semproxy.server.cors import allow_cross_origin
from semproxy.server.exchange import Exchange
from semproxy.server.hashkey import hash_key, request_var
from semproxy.server.request import read_body


async def enter(request: web.Request, exchange: Exchange, table: RouteTable,
                named: bool = True) -> RouteState:
    """`named`: the path names a protocol. One that names none is an unknown endpoint on a
    prefix route (404 in the client's error shape, before the body is read), and Chat
    Completions on a route written for that exact path."""
    if not named:
        unknown_endpoint(request, exchange, table)
    route = exchange.route = table.match(request.path, request.method)
    spec = route.spec
    allow_cross_origin(request, exchange, spec.cors)
    exchange.consumer = authenticate(request, spec, table.config.consumers)
    body = await read_body(request, spec.max_body, table.config.client_body_timeout_s)
    exchange.body_size = len(body)
    parsed = exchange.parsed = exchange.protocol.parse(body)
    del body  # parsed now: the bytes need not last as long as the request
    # The model as the client wrote it: the instance's configured one can come from
    # the environment (`options.model: ${VAR}`) and has no place in every log line.
    model = parsed.payload.get("model")
    exchange.model = model if isinstance(model, str) else None
    if spec.algorithm == "chash":
        exchange.hash_key = hash_key(request, spec.hash_on, spec.key, exchange.consumer)
    if spec.cache is not None:
        exchange.cache_headers, exchange.cache_vars = cache_inputs(request, spec.cache)
    return route


def unknown_endpoint(request: web.Request, exchange: Exchange, table: RouteTable) -> None:
    route = table.find(request.path)
    if route.spec.is_prefix:
        exchange.route = route
        allow_cross_origin(request, exchange, route.spec.cors)
        exchange.protocol = unnamed_protocol("anthropic-version" in request.headers)
        raise NotFoundError("no such endpoint: a route serves POST .../chat/completions, "
                            ".../messages, .../messages/count_tokens, .../responses, "
                            ".../embeddings, .../completions and GET .../models")


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
    """The route's models (`.../models`), or one of them (`.../models/{id}`, a 404
    `model_not_found` for a name the route does not answer to), in the shape of the
    SDK that asks."""
    route = exchange.route = table.find(request.path)
    allow_cross_origin(request, exchange, route.spec.cors)
    exchange.consumer = authenticate(request, route.spec, table.config.consumers)
    is_anthropic = "anthropic-version" in request.headers
    _, found, model = request.path.partition("/models/")
    if not found:
        body = anthropic_list(route.spec) if is_anthropic else openai_list(route.spec)
    elif model in route.models or model == AUTO or model in model_ids(route.spec):
        body = anthropic_model(model) if is_anthropic else openai_model(model)
    else:
        exchange.protocol = unnamed_protocol(is_anthropic)  # the error in the SDK's shape
        raise not_found(model)
    return web.Response(body=orjson.dumps(body), content_type="application/json",
                        headers={"X-Request-Id": exchange.request_id, **(exchange.headers or {})})
