"""relay: the answer to the client, whole or streamed, in the client's protocol; and the
one place an error is rendered.

An answer is an upstream's reply or one a phase made (a stored answer): both
are relayed the same way. A whole answer was read already (by the call
phase), or is read here; a stream is relayed event by event as it arrives,
never buffered whole, each run of events read by the answer's converters
(`speaks`, then `back`) on its way. Listeners on `Exchange.taps` see the
upstream's events and the final usage; with none registered they cost nothing.
"""

from __future__ import annotations

import contextlib
import logging
import time

import aiohttp
from aiohttp import web

from semproxy.errors import GatewayError, UpstreamError
from semproxy.protocols.contract import EventConverter
from semproxy.protocols.usage import body_usage
from semproxy.server.exchange import Answer, Exchange
from semproxy.transport.sse import sse_events

log = logging.getLogger("semproxy.proxy")

SSE = "text/event-stream"
LARGE_BODY = 256 * 1024  # relayed by `relay_large`; smaller bodies in one `web.Response`


def error_response(exchange: Exchange, error: GatewayError) -> web.Response:
    """Every error a client gets from the request path, in its own protocol's shape."""
    headers = {"X-Request-Id": exchange.request_id}
    if error.headers:
        headers.update(error.headers)
    if exchange.headers:
        headers.update(exchange.headers)
    body = exchange.protocol.error(error.status, error.message, error.type, error.code)
    return web.Response(body=body, status=error.status, headers=headers,
                        content_type="application/json")


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
        if exchange.budget is not None:  # budget-aware routing read the decision again
            choice = exchange.budget
            headers["X-AI-Budget-Route"] = f"{choice.to}; tier={choice.tier}; pick={choice.pick}"
        if len(exchange.attempts) > 1 and "X-AI-Failover" not in headers:
            headers["X-AI-Failover"] = ">".join(a.instance for a in exchange.attempts)
    if exchange.headers:
        headers.update(exchange.headers)
    return headers


async def relay(request: web.Request, exchange: Exchange, answer: Answer) -> web.StreamResponse:
    """Send `answer`: whole when it was read or is no event stream, else as it arrives."""
    reply = answer.reply
    exchange.answer = answer
    headers = debug_headers(exchange)
    body = answer.body
    if body is None:
        if reply.status == 200 and reply.content_type.startswith(SSE):
            return await relay_stream(request, exchange, answer, headers)
        raw = await reply.read()
        if reply.status < 400:
            body, usage = answer.speaks.answer(raw)
            exchange.usage = exchange.usage or usage
        else:
            body = answer.speaks.error(reply.status, raw)
    if answer.back is not None:
        body = converted(exchange, answer, body) if reply.status < 400 \
            else answer.back.error(reply.status, body)
    headers["Content-Type"] = answer.content_type or reply.content_type or "application/json"
    exchange.response_body = body
    exchange.complete = True
    if len(body) >= LARGE_BODY:
        return await relay_large(request, reply.status, headers, body)
    return web.Response(body=body, status=reply.status, headers=headers)


def converted(exchange: Exchange, answer: Answer, body: bytes) -> bytes:
    """A whole answer in the client's protocol; its usage taken from the conversion when
    `speaks` left it unread (one parse of the body instead of two)."""
    assert answer.back is not None
    if not answer.usage_back:
        return answer.back.answer(body)[0]
    try:
        body, exchange.usage = answer.back.answer(body)
    except Exception:
        # Not a completion the client can get; the tokens it reported still count,
        # as they did when the identity read them first.
        exchange.usage = body_usage(body)
        raise
    return body


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


async def relay_stream(request: web.Request, exchange: Exchange, answer: Answer,
                       headers: dict[str, str]) -> web.StreamResponse:
    """Relay SSE events as they arrive; never buffer a whole event stream.

    Once the first byte is out nothing can be retried, and no second HTTP answer
    can be written: an upstream failure (or an event over `max_sse_event_size`, or
    slower than the timeout, or one the converters cannot translate) ends the
    stream with the client protocol's error event and a clean end of the body;
    `exchange.stream_error` tells the access log why. A client that leaves closes
    the upstream.
    """
    reply = answer.reply
    response = web.StreamResponse(status=200, headers={
        **headers, "Content-Type": SSE, "Cache-Control": "no-cache"})
    try:
        await response.prepare(request)
    except BaseException:  # the client is gone before the first byte: free the upstream
        reply.abort()
        raise
    limit = answer.net.max_body  # what a converter may hold, as for a whole answer
    first = answer.speaks.events(exchange.model, limit)
    back = None if answer.back is None else answer.back.events(exchange.model, limit)
    last: EventConverter = back or first
    try:
        async for chunk in sse_events(reply, answer.net.max_event, answer.net.timeout_s,
                                      answer.label):
            if exchange.ttft is None:
                exchange.ttft = time.monotonic() - exchange.started
            if exchange.taps:
                for tap in exchange.taps:
                    tap.events(chunk, answer.speaks.target)
            out = first.feed(chunk)
            if back is not None:
                out = back.feed(out)
            if out:
                await response.write(out)
        tail = first.close()
        if back is not None:
            tail = back.feed(tail) + back.close()
        if tail:
            await response.write(tail)
        exchange.stream_error = stream_outcome(first, last)
    except (ConnectionResetError, aiohttp.ClientConnectionResetError):
        log.info("client left mid-stream; closing the upstream request")
        exchange.stream_error = "client_left"
        reply.abort()
        return response
    except (UpstreamError, TimeoutError) as exc:
        log.warning("upstream stream broke: %s", type(exc).__name__)
        exchange.stream_error = "upstream_timeout" if isinstance(exc, TimeoutError) \
            else "upstream_error"
        public = exc.public if isinstance(exc, UpstreamError) else None
        await _write_quietly(response, last.error(public or "upstream stream ended unexpectedly"))
    except Exception as exc:  # outermost layer of a started stream: a converter met an
        # event it cannot translate; the client gets its protocol's error event, never a
        # second HTTP answer where the body's next chunk belongs.
        log.warning("a streamed answer could not be translated (%s); ending it with an "
                    "error event", type(exc).__name__)
        exchange.stream_error = "untranslatable"
        reply.abort()
        await _write_quietly(response, last.error("the upstream sent an event the gateway "
                                                  "could not translate"))
    finally:
        reply.release()
        exchange.usage = first.usage
        exchange.complete = first.done
        for tap in exchange.taps or ():
            tap.end(first.usage, first.done)
    await _write_eof_quietly(response)
    return response


def stream_outcome(first: EventConverter, last: EventConverter) -> str | None:
    """Why a stream that ran to its end is not a whole answer (None: it is)."""
    if first.failed:
        return "upstream_error"  # the upstream's own error event
    if last.failed or not first.done:
        return "incomplete"  # cut before its end marker
    return None


async def _write_quietly(response: web.StreamResponse, data: bytes) -> None:
    with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
        await response.write(data)


async def _write_eof_quietly(response: web.StreamResponse) -> None:
    with contextlib.suppress(ConnectionResetError, aiohttp.ClientConnectionResetError):
        await response.write_eof()
