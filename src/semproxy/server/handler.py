"""The request path, top to bottom:

match route -> read + parse body -> order candidates -> failover loop ->
provider call -> relay the response (whole or streamed) with debug headers.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from semproxy.config.runtime import InstanceSpec
from semproxy.errors import (
    BadRequestError,
    GatewayError,
    UnavailableError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
)
from semproxy.observability.observer import RequestObserver
from semproxy.protocols.models import anthropic_list, openai_list
from semproxy.providers.base import EmbeddingsRelay, NativeRelay, Reply
from semproxy.providers.http import HttpClients
from semproxy.providers.sse import sse_events
from semproxy.semantic.decision import Decision
from semproxy.semantic.query import RoutingInput
from semproxy.server.auth import authenticate
from semproxy.server.exchange import (
    Attempt,
    Exchange,
    StreamUsage,
    finish,
    request_id,
    usage_from_body,
)
from semproxy.server.inbound import (
    CHAT,
    EMBEDDINGS,
    broken_stream,
    is_models,
    protocol_for,
    translate,
)
from semproxy.server.request import read_body
from semproxy.server.routes import Candidates, RouteState, RouteTable
from semproxy.server.shadow import ShadowRunner, shadow_decision, shadow_input

log = logging.getLogger("semproxy.proxy")

SSE = "text/event-stream"
LARGE_BODY = 256 * 1024  # relayed by `relay_large`; smaller bodies in one `web.Response`
REQUEST_ID = web.RequestKey("semproxy.request_id", str)  # read by the error middleware


@dataclass(slots=True)
class Result:
    """The end of one attempt: an HTTP answer (`reply`) or a transport `error`."""

    outcome: str
    seconds: float
    reply: Reply | None = None
    body: bytes | None = None  # read before relaying, unless the reply is an event stream
    error: UpstreamError | None = None
    native: bool = False  # the answer is in the client's protocol already


async def handle(request: web.Request, table: RouteTable, clients: HttpClients,
                 observer: RequestObserver, shadows: ShadowRunner | None = None
                 ) -> web.StreamResponse:
    """Serve one request and account for it (metrics, access log), whatever happens."""
    exchange = Exchange(request_id(request))
    request[REQUEST_ID] = exchange.request_id
    protocol = exchange.protocol = protocol_for(request.path)
    try:
        response = await serve(request, exchange, table, clients, observer)
        exchange.status = response.status
        return response
    except GatewayError as exc:
        exchange.status = exc.status
        if protocol is CHAT:
            raise  # rendered by the error middleware, as it always was
        return web.Response(body=protocol.error(exc.status, exc.message, exc.type, exc.code),
                            status=exc.status, content_type="application/json",
                            headers={"X-Request-Id": exchange.request_id})
    finally:
        finish(exchange, observer)
        if shadows is not None:
            shadows.after(exchange)


async def serve(request: web.Request, exchange: Exchange, table: RouteTable,
                clients: HttpClients, observer: RequestObserver) -> web.StreamResponse:
    if is_models(request.path, request.method):
        return list_models(request, exchange, table)
    route = exchange.route = table.match(request.path, request.method)
    exchange.consumer = authenticate(request, route.spec, table.config.consumers)
    parsed = exchange.protocol.parse(await read_body(
        request, route.spec.max_body, table.config.client_body_timeout_s))
    payload = exchange.payload = parsed.payload
    exchange.parsed = parsed
    # The model as the client wrote it: the instance's configured one can come from
    # the environment (`options.model: ${VAR}`) and has no place in every log line.
    model = payload.get("model")
    exchange.model = model if isinstance(model, str) else None
    if route.semantic is not None and parsed.query is not None:
        exchange.decision = await decide(route, payload, parsed.query, observer)
    if route.spec.shadow is not None and route.spec.shadow.inline:
        # debug mode: the shadow decides before the answer, for X-AI-Shadow-Route
        query = shadow_input(route, exchange)
        exchange.shadow = None if query is None else await shadow_decision(route, query)
    candidates = route.candidates(request, exchange.decision, exchange.consumer)
    return await failover(request, exchange, candidates, payload, clients, observer)


def list_models(request: web.Request, exchange: Exchange, table: RouteTable) -> web.Response:
    """The route's models, in the list shape of the SDK that asks."""
    route = exchange.route = table.find(request.path)
    exchange.consumer = authenticate(request, route.spec, table.config.consumers)
    is_anthropic = "anthropic-version" in request.headers
    body = anthropic_list(route.spec) if is_anthropic else openai_list(route.spec)
    return web.Response(body=orjson.dumps(body), content_type="application/json",
                        headers={"X-Request-Id": exchange.request_id})


async def decide(route: RouteState, payload: dict[str, Any], last: RoutingInput,
                 observer: RequestObserver) -> Decision:
    """Route on `last`, the user's own words as the client protocol tells them (and on
    the earlier user turns of the chat `payload` when the route reads conversations)."""
    assert route.semantic is not None
    started = time.monotonic()
    decision, cached = await route.semantic.route(
        route.semantic.query(payload.get("messages", ()), last))
    if decision.ranking:
        observer.on_embedding(route.spec.id, time.monotonic() - started, cached)
    observer.on_semantic(route.spec.id, decision,
                         last.text if route.spec.logging.payloads else None)
    return decision


async def failover(request: web.Request, exchange: Exchange, candidates: Candidates,
                   payload: dict[str, Any], clients: HttpClients, observer: RequestObserver
                   ) -> web.StreamResponse:
    """The one retry loop: walk the candidates until an answer may be relayed.

    An attempt is retried on the next candidate when it failed in transport
    (refused, reset, timed out) or answered a status of the route's retry policy,
    unless `max_retries` extra attempts were made already or the failed attempt
    took longer than `retry_on_failure_within_ms`. Unhealthy instances are
    skipped unless all are. Nothing is retried once bytes went to the client:
    every attempt ends before the relay starts.
    """
    route = exchange.route
    assert route is not None
    health = route.health
    skip = health.unusable(route.names)
    skip = skip | _unable(exchange, route)
    tried: set[str] = set()
    name = candidates.next(skip)
    if name is None:
        raise UnavailableError(f"route {route.spec.id} has no instance that can take traffic")
    while True:
        tried.add(name)
        health.claim(name)
        result = await _attempt(route, name, payload, clients, exchange)
        _record(exchange, observer, name, result)
        nxt = candidates.next(tried | skip) if _may_retry(exchange, result) else None
        if nxt is None:
            return await _conclude(request, exchange, result)
        _release(result)
        log.warning("instance %s %s, falling back to %s", name,
                    exchange.attempts[-1].describe(), nxt)
        observer.on_fallback(route.spec.id, name, nxt, result.outcome)
        name = nxt


def _unable(exchange: Exchange, route: RouteState) -> frozenset[str]:
    """Instances that cannot serve this request at all (the loop skips them)."""
    if exchange.protocol is EMBEDDINGS:
        if len(route.without_embeddings) == len(route.names):
            raise BadRequestError(f"route {route.spec.id} has no instance that serves "
                                  "embeddings")
        return route.without_embeddings
    parsed = exchange.parsed
    if parsed is None or parsed.unsupported is None:
        return frozenset()
    native = route.native.get(exchange.protocol.name, frozenset())
    if not native:
        raise parsed.unsupported
    return frozenset(route.names) - native


async def _attempt(route: RouteState, name: str, payload: dict[str, Any], clients: HttpClients,
                   exchange: Exchange) -> Result:
    instance = route.by_name[name]
    started = time.monotonic()
    parsed = exchange.parsed
    native = parsed.native if parsed is not None and name in route.native.get(
        exchange.protocol.name, ()) else None
    try:
        if native is not None:
            reply = await _native(instance, clients, {**native, **instance.options},
                                  exchange.request_id)
        elif exchange.protocol is EMBEDDINGS:
            reply = await _embeddings(instance, clients, {**payload, **instance.options},
                                      exchange.request_id)
        else:
            reply = await instance.provider.chat(
                clients, instance.target, {**payload, **instance.options}, exchange.request_id)
        # A whole body is read here, inside the attempt: a connection that breaks
        # before the client saw a byte can still fail over. Streams cannot.
        body = None if _is_stream(reply) else await reply.read()
    except UpstreamError as exc:
        return Result(_transport_outcome(exc), time.monotonic() - started, error=exc)
    outcome = "ok" if reply.status < 400 else f"http_{reply.status}"
    return Result(outcome, time.monotonic() - started, reply, body, native=native is not None)


async def _native(instance: InstanceSpec, clients: HttpClients, body: dict[str, Any],
                  rid: str) -> Reply:
    provider = instance.provider
    assert isinstance(provider, NativeRelay)  # route.native lists only these
    return await provider.relay_native(clients, instance.target, body, rid)


async def _embeddings(instance: InstanceSpec, clients: HttpClients, body: dict[str, Any],
                      rid: str) -> Reply:
    provider, target = instance.provider, instance.embeddings_target
    assert isinstance(provider, EmbeddingsRelay) and target is not None  # skipped otherwise
    return await provider.relay_embeddings(clients, target, body, rid)


def _is_stream(reply: Reply) -> bool:
    return reply.status == 200 and reply.content_type.startswith(SSE)


def _transport_outcome(error: UpstreamError) -> str:
    if isinstance(error, UpstreamTimeoutError):
        return "timeout"
    if isinstance(error, UpstreamConnectError):
        return "connect"
    return "reset"  # the connection was made, then broke


def _record(exchange: Exchange, observer: RequestObserver, name: str, result: Result) -> None:
    route = exchange.route
    assert route is not None
    exchange.attempts.append(Attempt(name, result.outcome))
    observer.on_attempt(route.spec.id, name, result.outcome, result.seconds)
    if result.outcome == "ok":
        route.health.record_success(name)
    else:
        route.health.record_failure(name, result.outcome)


def _failed(exchange: Exchange, result: Result) -> bool:
    """A failure the route fails over on: any transport error, or a status of its policy."""
    assert exchange.route is not None
    return result.reply is None or exchange.route.spec.retry.is_retryable(result.reply.status)


def _may_retry(exchange: Exchange, result: Result) -> bool:
    assert exchange.route is not None
    policy = exchange.route.spec.retry
    if not _failed(exchange, result):
        return False
    if result.error is not None and result.error.may_have_arrived and not policy.resend:
        return False  # never send a request twice unless the route asks for failover
    if policy.max_retries is not None and len(exchange.attempts) > policy.max_retries:
        return False
    return policy.within_ms is None or result.seconds * 1000 <= policy.within_ms


def _release(result: Result) -> None:
    if result.reply is not None:
        result.reply.release()


async def _conclude(request: web.Request, exchange: Exchange, result: Result
                    ) -> web.StreamResponse:
    """Relay the last answer; with none, report every instance tried and why."""
    if _failed(exchange, result):
        _log_exhausted(exchange, result)
    if result.reply is not None:
        return await relay(request, exchange, result.reply, result.body, result.native)
    message = "no instance could serve the request"
    broken = result.error if type(result.error) is UpstreamError else None
    if exchange.route is not None and exchange.route.spec.debug_headers:
        # Instance names, outcomes and upstream addresses describe the deployment:
        # only for routes whose debug switch is on (they are always in the log).
        tried = ", ".join(f"{a.instance} {a.describe()}" for a in exchange.attempts)
        # A broken answer (too large, invalid status, corrupt body) says why; refused
        # and timed-out attempts are described by their outcome already.
        message += f"; tried: {tried}" + (f"; {broken.message}" if broken else "")
    else:  # how each attempt ended, and why an answer was unusable, without names
        outcomes = ", ".join(a.describe() for a in exchange.attempts)
        message += f"; attempts: {outcomes}" if outcomes else ""
        message += f"; {broken.public}" if broken is not None and broken.public else ""
    error: UpstreamError = UpstreamError(message)
    if len(exchange.attempts) == 1 and isinstance(result.error, UpstreamTimeoutError):
        error = UpstreamTimeoutError(error.message)
    body = exchange.protocol.error(error.status, error.message, error.type, error.code)
    return web.Response(body=body, status=error.status, headers=debug_headers(exchange),
                        content_type="application/json")


def _log_exhausted(exchange: Exchange, result: Result) -> None:
    assert exchange.route is not None
    tried = ", ".join(f"{a.instance} ({a.outcome})" for a in exchange.attempts)
    last = f"; {result.error.message}" if type(result.error) is UpstreamError else ""
    log.warning("route %s: giving up after %d attempt(s): %s%s", exchange.route.spec.id,
                len(exchange.attempts), tried, last)


def debug_headers(exchange: Exchange) -> dict[str, str]:
    headers = {"X-Request-Id": exchange.request_id}
    assert exchange.route is not None
    spec = exchange.route.spec
    if spec.debug_headers and exchange.attempts:
        headers["X-AI-Instance"] = exchange.attempts[-1].instance
        if len(exchange.attempts) > 1:
            headers["X-AI-Failover"] = ">".join(a.instance for a in exchange.attempts)
    if exchange.shadow is not None:
        headers["X-AI-Shadow-Route"] = exchange.shadow.route_label
    decision, semantic = exchange.decision, spec.semantic
    if decision is not None and semantic is not None and semantic.expose_scores:
        if decision.ranking:
            headers["X-AI-Semantic-Route"] = decision.route_label
            headers["X-AI-Semantic-Scores"] = decision.scores_text
            if semantic.apisix_header:
                headers["X-AI-Semantic-Picked-Instance"] = decision.pick
        if not decision.matched:
            headers["X-AI-Semantic-Reason"] = decision.reason
        if decision.context:
            headers["X-AI-Semantic-Context"] = decision.context_text
        if len(exchange.attempts) > 1 and "X-AI-Failover" not in headers:
            headers["X-AI-Failover"] = ">".join(a.instance for a in exchange.attempts)
    return headers


async def relay(request: web.Request, exchange: Exchange, reply: Reply, body: bytes | None,
                native: bool = False) -> web.StreamResponse:
    """Send the chosen answer: ``body`` when it was read already, else the live stream.
    A `native` answer is in the client's protocol already and goes as it is."""
    headers = debug_headers(exchange)
    if body is None:
        return await relay_stream(request, exchange, reply, headers, native)
    exchange.usage = usage_from_body(body)
    if exchange.protocol is not CHAT and not native:
        body = translate(exchange.protocol, reply.status, body)
        headers["Content-Type"] = "application/json"
    else:
        headers["Content-Type"] = reply.content_type or "application/json"
    exchange.response_body = body
    if len(body) >= LARGE_BODY:
        return await relay_large(request, reply.status, headers, body)
    return web.Response(body=body, status=reply.status, headers=headers)


async def relay_large(request: web.Request, status: int, headers: dict[str, str], body: bytes
                      ) -> web.StreamResponse:
    """Send a big body, and let it go at once if the client left while it was sent.

    aiohttp reports a lost client through a future whose exception's traceback
    leads back to the future (a reference cycle). With `web.Response` that cycle
    also reaches the response and so the body; the worker's GC tuning may then
    keep it for a long time. Here the traceback is dropped where the error is
    caught, so nothing of this request stays reachable from the cycle.
    """
    response = web.StreamResponse(status=status, headers=headers)
    response.content_length = len(body)
    try:
        await response.prepare(request)
        await response.write(body)
        await response.write_eof()
    except ConnectionError as exc:  # aiohttp's ClientConnectionResetError is one too
        exc.__traceback__ = None
    return response


async def relay_stream(request: web.Request, exchange: Exchange, reply: Reply,
                       headers: dict[str, str], native: bool = False) -> web.StreamResponse:
    """Relay SSE events as they arrive; never buffer a whole event stream.

    Once the first byte is out nothing can be retried: an upstream failure (or an
    event over `max_sse_event_size`, or slower than the timeout) ends the stream
    with an error event; a client that leaves closes the upstream.
    """
    response = web.StreamResponse(status=200, headers={
        **headers, "Content-Type": SSE, "Cache-Control": "no-cache"})
    try:
        await response.prepare(request)
    except BaseException:  # the client is gone before the first byte: free the upstream
        reply.abort()
        raise
    assert exchange.route is not None
    target = exchange.route.by_name[exchange.attempts[-1].instance].target
    usage = StreamUsage()
    translator = None if native else exchange.protocol.stream(exchange.model)
    try:
        async for chunk in sse_events(reply, target.net.max_event, target.net.timeout_s,
                                      target.label):
            if exchange.ttft is None:
                exchange.ttft = time.monotonic() - exchange.started
            usage.feed(chunk)
            exchange.usage = usage.usage
            await response.write(chunk if translator is None else translator.feed(chunk))
        if translator is not None:
            await response.write(translator.close())
    except (ConnectionResetError, aiohttp.ClientConnectionResetError):
        log.info("client left mid-stream; closing the upstream request")
        reply.abort()
        return response
    except (UpstreamError, TimeoutError) as exc:
        log.warning("upstream stream broke: %s", type(exc).__name__)
        await _write_quietly(response, broken_stream(translator))
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
