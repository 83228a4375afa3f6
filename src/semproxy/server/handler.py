"""The request path, top to bottom:

match route -> read + parse body -> order candidates -> failover loop ->
provider call -> relay the response (whole or streamed) with debug headers.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from semproxy.balancer.semantic import Decision
from semproxy.errors import GatewayError, UpstreamError, UpstreamTimeoutError, error_body
from semproxy.providers.base import Reply
from semproxy.providers.http import HttpClients
from semproxy.server.request import parse_chat, read_body, routing_text
from semproxy.server.routes import Candidates, RouteState, RouteTable

log = logging.getLogger("semproxy.proxy")

SSE = "text/event-stream"


@dataclass(slots=True)
class Attempt:
    instance: str
    outcome: str  # "ok", "http_503", "timeout", "connect", ...


@dataclass(slots=True)
class Exchange:
    """What happened to one request; read by headers, logs and metrics."""

    route: RouteState
    decision: Decision | None = None
    attempts: list[Attempt] = field(default_factory=list)


async def handle(request: web.Request, table: RouteTable, clients: HttpClients
                 ) -> web.StreamResponse:
    route = table.match(request.path, request.method)
    payload = parse_chat(await read_body(request, route.spec.max_body))
    exchange = Exchange(route)
    if route.semantic is not None:
        exchange.decision = await route.semantic.decide(routing_text(payload))
    candidates = route.candidates(request, exchange.decision)
    return await failover(request, exchange, candidates, payload, clients)


async def failover(request: web.Request, exchange: Exchange, candidates: Candidates,
                   payload: dict[str, Any], clients: HttpClients) -> web.StreamResponse:
    """The one retry loop: walk candidates until one answers with a non-retryable status."""
    route = exchange.route
    policy = route.spec.retry
    tried: set[str] = set()
    skip = route.health.unusable(route.names)
    last_error: GatewayError | None = None
    while (name := candidates.next(tried | skip)) is not None:
        if exchange.attempts and policy.max_retries is not None \
                and len(exchange.attempts) > policy.max_retries:
            break
        tried.add(name)
        started = time.monotonic()
        reply, error = await _attempt(route, name, payload, clients)
        outcome = "ok" if reply is not None and not policy.is_retryable(reply.status) \
            else _outcome(reply, error)
        exchange.attempts.append(Attempt(name, outcome))
        if outcome == "ok":
            route.health.record_success(name)
            assert reply is not None
            return await relay(request, exchange, reply)
        route.health.record_failure(name, outcome)
        elapsed_ms = (time.monotonic() - started) * 1000
        nxt = candidates.next(tried | skip)
        if nxt is None or (policy.within_ms is not None and elapsed_ms > policy.within_ms):
            if reply is not None:
                return await relay(request, exchange, reply)
            last_error = error
            break
        if reply is not None:
            reply.release()
        log.warning("instance %s returned %s, falling back to %s", name, outcome, nxt)
    raise _exhausted(exchange, last_error)


async def _attempt(route: RouteState, name: str, payload: dict[str, Any], clients: HttpClients
                   ) -> tuple[Reply | None, GatewayError | None]:
    instance = route.by_name[name]
    body = {**payload, **instance.options}
    try:
        return await instance.provider.chat(clients, instance.target, body), None
    except UpstreamError as exc:
        return None, exc


def _outcome(reply: Reply | None, error: GatewayError | None) -> str:
    if reply is not None:
        return f"http_{reply.status}"
    return "timeout" if isinstance(error, UpstreamTimeoutError) else "connect"


def _exhausted(exchange: Exchange, last: GatewayError | None) -> GatewayError:
    tried = ", ".join(f"{a.instance} ({a.outcome})" for a in exchange.attempts) or "none"
    if last is not None and len(exchange.attempts) == 1:
        return type(last)(f"{last.message}; tried: {tried}")
    error = UpstreamTimeoutError if last is not None and isinstance(last, UpstreamTimeoutError) \
        and len(exchange.attempts) == 1 else UpstreamError
    return error(f"all instances failed; tried: {tried}")


def debug_headers(exchange: Exchange) -> dict[str, str]:
    headers: dict[str, str] = {}
    spec = exchange.route.spec
    if spec.debug_headers and exchange.attempts:
        headers["X-AI-Instance"] = exchange.attempts[-1].instance
        if len(exchange.attempts) > 1:
            headers["X-AI-Failover"] = ">".join(a.instance for a in exchange.attempts)
    decision, semantic = exchange.decision, spec.semantic
    if decision is not None and semantic is not None and semantic.expose_scores:
        if decision.ranking:
            headers["X-AI-Semantic-Route"] = decision.route_label
            headers["X-AI-Semantic-Scores"] = decision.scores_text()
            if semantic.apisix_header:
                headers["X-AI-Semantic-Picked-Instance"] = decision.pick
        if not decision.matched:
            headers["X-AI-Semantic-Reason"] = decision.reason
        if len(exchange.attempts) > 1 and "X-AI-Failover" not in headers:
            headers["X-AI-Failover"] = ">".join(a.instance for a in exchange.attempts)
    return headers


async def relay(request: web.Request, exchange: Exchange, reply: Reply) -> web.StreamResponse:
    headers = debug_headers(exchange)
    if reply.status == 200 and reply.content_type.startswith(SSE):
        return await relay_stream(request, reply, headers)
    try:
        body = await reply.read()
    except UpstreamError as exc:
        raise exc
    return web.Response(body=body, status=reply.status, headers=headers,
                        content_type=reply.content_type.split(";")[0] or "application/json")


async def relay_stream(request: web.Request, reply: Reply, headers: dict[str, str]
                       ) -> web.StreamResponse:
    """Relay SSE bytes as they arrive; never buffer a whole event stream.

    Once the first byte is out nothing can be retried: an upstream failure ends
    the stream with an error event; a client that leaves closes the upstream.
    """
    response = web.StreamResponse(status=200, headers={
        **headers, "Content-Type": SSE, "Cache-Control": "no-cache"})
    await response.prepare(request)
    try:
        async for chunk in reply.iter_chunks():
            await response.write(chunk)
    except (ConnectionResetError, aiohttp.ClientConnectionResetError):
        log.info("client left mid-stream; closing the upstream request")
        reply.release()
        return response
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning("upstream stream broke: %s", type(exc).__name__)
        event = error_body("upstream stream ended unexpectedly", "upstream_error", "bad_gateway")
        await _write_quietly(response, b"data: " + event + b"\n\n")
    finally:
        reply.release()
    await _write_eof_quietly(response)
    return response


async def _write_quietly(response: web.StreamResponse, data: bytes) -> None:
    with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
        await response.write(data)


async def _write_eof_quietly(response: web.StreamResponse) -> None:
    with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
        await response.write_eof()
