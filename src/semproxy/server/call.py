"""call: the upstream attempts, with failover, through the transport.

The one retry loop of the gateway. It starts with the route phase's pick and
walks the candidates until an answer may be relayed: an attempt is retried on
the next candidate when it failed in transport (refused, reset, timed out) or
answered a status of the route's retry policy, unless `max_retries` extra
attempts were made already or the failed attempt took longer than
`retry_on_failure_within_ms`. Nothing is retried once bytes went to the
client: every attempt ends before the relay starts. A whole answer is read,
and read into Chat Completions by its leg, inside the attempt, so a connection
that breaks or an answer that is not what the upstream's protocol promises
fails over too.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from semproxy.errors import (
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
)
from semproxy.protocols.contract import exact
from semproxy.runtime.legs import Leg
from semproxy.runtime.routes import RouteState
from semproxy.server.exchange import Answer, Attempt, Exchange
from semproxy.server.relay import debug_headers
from semproxy.server.route import next_candidate
from semproxy.transport.base import Reply, Transport
from semproxy.types import Usage

log = logging.getLogger("semproxy.proxy")

SSE = "text/event-stream"
# Requests from this size on are shelved during their upstream call (Parsed.shelve):
# below it, the objects cost too little to be worth the copies.
SHELVE_AT = 1024 * 1024


@dataclass(slots=True)
class Result:
    """The end of one attempt: an HTTP answer (`reply`) or a transport `error`."""

    outcome: str
    seconds: float
    leg: Leg
    reply: Reply | None = None
    body: bytes | None = None  # read before relaying, unless the reply is an event stream
    usage: Usage | None = None
    error: UpstreamError | None = None


class CallPhase:
    def __init__(self, route: RouteState, transport: Transport) -> None:
        self.route = route
        self.transport = transport

    async def run(self, exchange: Exchange) -> Answer:
        route, observer = self.route, exchange.observer
        name = exchange.pick
        tried: set[str] = set()  # not set[str](): a generic alias call raises inside
        assert name is not None
        while True:
            tried.add(name)
            route.health.claim(name)
            result = await self.attempt(exchange, name)
            self.record(exchange, name, result)
            nxt = None
            if self.may_retry(exchange, result):
                exclude = exchange.skip | tried
                assert exchange.candidates is not None
                nxt = exchange.candidates.next(exclude) if exchange.gates is None \
                    else await next_candidate(exchange, exclude)
            if nxt is None:
                return self.conclude(exchange, result)
            if result.reply is not None:
                result.reply.release()
            log.warning("instance %s %s, falling back to %s", name,
                        exchange.attempts[-1].describe(), nxt)
            observer.on_failover(route.spec.id, name, nxt, result.outcome)
            name = nxt

    async def attempt(self, exchange: Exchange, name: str) -> Result:
        assert exchange.legs is not None and exchange.parsed is not None
        leg = exchange.legs.legs[name]
        started = time.monotonic()
        data = leg.body(exchange.parsed)
        if exchange.body_size >= SHELVE_AT:
            # Held until the answer's headers come, perhaps for minutes: the body as sent
            # and the request as bytes, not the Python objects they were made from.
            data = exact(data)
            exchange.parsed.shelve()
        try:
            reply = await self.transport.post(leg.target, data, exchange.request_id)
            del data
            if reply.status == 200 and reply.content_type.startswith(SSE):
                return Result("ok", time.monotonic() - started, leg, reply)
            # Read by the leg: in Chat Completions (or the client's own protocol on a
            # native leg), with the usage it reported.
            raw = await reply.read()
            if reply.status >= 400:
                body, usage = leg.speaks.error(reply.status, raw), None
            elif leg.usage_back:  # the relay's conversion reads it (Leg.usage_back)
                body, usage = raw, None
            else:
                body, usage = leg.speaks.answer(raw)
        except UpstreamError as exc:
            return Result(outcome(exc), time.monotonic() - started, leg, error=exc)
        status = "ok" if reply.status < 400 else f"http_{reply.status}"
        return Result(status, time.monotonic() - started, leg, reply, body, usage)

    def record(self, exchange: Exchange, name: str, result: Result) -> None:
        route = self.route
        exchange.attempts.append(Attempt(name, result.outcome))
        exchange.observer.on_attempt(route.spec.id, name, result.outcome, result.seconds)
        if result.outcome == "ok":
            route.health.record_success(name)
        else:
            route.health.record_failure(name, result.outcome)

    def failed(self, result: Result) -> bool:
        """A failure the route fails over on: any transport error, or a status of its policy."""
        return result.reply is None or self.route.spec.retry.is_retryable(result.reply.status)

    def may_retry(self, exchange: Exchange, result: Result) -> bool:
        policy = self.route.spec.retry
        if not self.failed(result):
            return False
        if result.error is not None and result.error.may_have_arrived and not policy.resend:
            return False  # never send a request twice unless the route asks for failover
        if policy.max_retries is not None and len(exchange.attempts) > policy.max_retries:
            return False
        return policy.within_ms is None or result.seconds * 1000 <= policy.within_ms

    def conclude(self, exchange: Exchange, result: Result) -> Answer:
        """The last attempt's answer; with none, the error that reports every instance
        tried and why."""
        if self.failed(result):
            self.log_exhausted(exchange, result)
        leg = exchange.leg = result.leg
        if result.reply is not None:
            exchange.usage = result.usage
            return Answer(result.reply, leg.speaks, leg.back, result.body, leg.content_type,
                          leg.target.net, leg.target.label or "upstream", leg.usage_back)
        raise self.exhausted(exchange, result.error)

    def exhausted(self, exchange: Exchange, last: UpstreamError | None) -> UpstreamError:
        message = "no instance could serve the request"
        broken = last if type(last) is UpstreamError else None
        if self.route.spec.debug_headers:
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
        error_type = UpstreamTimeoutError if len(exchange.attempts) == 1 \
            and isinstance(last, UpstreamTimeoutError) else UpstreamError
        return error_type(message, headers=debug_headers(exchange))

    def log_exhausted(self, exchange: Exchange, result: Result) -> None:
        tried = ", ".join(f"{a.instance} ({a.outcome})" for a in exchange.attempts)
        last = f"; {result.error.message}" if type(result.error) is UpstreamError else ""
        log.warning("route %s: giving up after %d attempt(s): %s%s", self.route.spec.id,
                    len(exchange.attempts), tried, last)


def outcome(error: UpstreamError) -> str:
    if isinstance(error, UpstreamTimeoutError):
        return "timeout"
    if isinstance(error, UpstreamConnectError):
        return "connect"
    return "reset"  # the connection was made, then broke
