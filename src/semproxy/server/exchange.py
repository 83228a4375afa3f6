"""The record of one request: what was chosen, tried and answered, and how long it took.

The handler fills it in as the request moves along; `finish` turns it into
metrics and the one access-log line per request. Nothing here holds secrets:
headers are never copied in, and payloads only when the route's
`logging.payloads` asks for them.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from semproxy.observability.logging import log_line
from semproxy.observability.observer import RequestObserver
from semproxy.protocols.contract import ClientProtocol, Parsed
from semproxy.semantic.decision import Decision
from semproxy.server.inbound import CHAT
from semproxy.server.routes import RouteState

access_log = logging.getLogger("semproxy.access")

# Token counts by their name in Chat Completions, and in Anthropic's answers
# (relayed as they are from a native instance).
USAGE_KEYS = {"prompt_tokens": "prompt", "completion_tokens": "completion",
              "total_tokens": "total", "input_tokens": "prompt", "output_tokens": "completion"}
MAX_LOGGED_PAYLOAD = 4096
MAX_REQUEST_ID = 128
MAX_PENDING_LINE = 64 * 1024  # a usage event is far smaller; longer lines are not kept


@dataclass(slots=True)
class Attempt:
    instance: str
    outcome: str  # "ok", "http_503", "timeout", "connect", "reset"

    def describe(self) -> str:
        """How the attempt ended, in the words of the logs and the all-failed body."""
        kind, _, code = self.outcome.partition("_")
        return f"returned {code}" if kind == "http" else f"failed ({self.outcome})"


@dataclass(slots=True)
class Exchange:
    request_id: str
    started: float = field(default_factory=time.monotonic)
    route: RouteState | None = None
    consumer: str | None = None
    decision: Decision | None = None
    shadow: Decision | None = None  # the shadow table's decision, when made inline
    attempts: list[Attempt] = field(default_factory=list)
    status: int = 0
    ttft: float | None = None
    usage: dict[str, int] | None = None
    model: str | None = None
    payload: dict[str, Any] | None = None
    parsed: Parsed | None = None
    response_body: bytes | None = None
    protocol: ClientProtocol = CHAT

    @property
    def instance(self) -> str:
        return self.attempts[-1].instance if self.attempts else "-"


class _IdSource:
    """Fresh request ids: 16 random hex digits per process, then a 16-digit counter.

    As long as a uuid4 hex and as unique in practice (a collision needs two
    processes to draw the same 64-bit prefix), without a system call for random
    bytes on every request. A forked worker draws its own prefix.
    """

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.prefix = os.urandom(8).hex()
        self.counter = itertools.count(1)

    def next(self) -> str:
        return f"{self.prefix}{next(self.counter):016x}"


_ids = _IdSource()


def request_id(request: web.Request) -> str:
    """The client's X-Request-Id when it is a sane token, else a fresh one."""
    given = request.headers.get("X-Request-Id", "")
    if 0 < len(given) <= MAX_REQUEST_ID and given.isascii() and given.isprintable():
        return given
    return _ids.next()


def usage_from_body(body: bytes) -> dict[str, int] | None:
    if b'"usage"' not in body:
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    usage = data.get("usage")
    message = data.get("message")
    if usage is None and isinstance(message, dict):
        # Anthropic's `message_start` event carries the input count inside its message;
        # `message_delta` brings the output count at the top level later.
        usage = message.get("usage")
    return _usage(usage)


class StreamUsage:
    """Token usage from a relayed event stream, whatever its chunk boundaries.

    Chunks arrive as the network cuts them, so an event can be split in two; the
    unfinished last line is kept until the next chunk completes it.
    """

    def __init__(self) -> None:
        self.usage: dict[str, int] | None = None
        self._pending = b""

    def feed(self, chunk: bytes) -> None:
        *lines, rest = (self._pending + chunk).split(b"\n")
        self._pending = rest if len(rest) <= MAX_PENDING_LINE else b""
        for line in lines:
            if line.startswith(b"data: {") and b'"usage"' in line:
                found = usage_from_body(line[6:])
                if found:  # Anthropic spreads its counts over two events
                    self.usage = {**self.usage, **found} if self.usage else found


def _usage(node: Any) -> dict[str, int] | None:
    if not isinstance(node, dict):
        return None
    found = {USAGE_KEYS[k]: v for k, v in node.items()
             if k in USAGE_KEYS and isinstance(v, int) and v >= 0}
    return found or None


def finish(exchange: Exchange, observer: RequestObserver) -> None:
    seconds = time.monotonic() - exchange.started
    route = exchange.route.spec.id if exchange.route else "-"
    observer.on_response(route, exchange.instance, exchange.status, seconds, exchange.ttft,
                         exchange.usage, exchange.protocol.name)
    if wants_access_line(exchange):
        log_line(access_log, logging.INFO,
                 f"{route} {exchange.request_id} -> {exchange.instance} {exchange.status}",
                 access_fields(exchange, seconds))


def wants_access_line(exchange: Exchange) -> bool:
    """The access log is on (the default), or the route asks for its own lines.

    A route with APISIX `logging.summaries` or `logging.payloads` gets its line
    even when the access log is off (`serve --no-access-log`), as in APISIX where
    those settings are what turn logging on for a route.
    """
    settings = exchange.route.spec.logging if exchange.route else None
    if settings is not None and (settings.summaries or settings.payloads):
        return True
    return access_log.isEnabledFor(logging.INFO)


def access_fields(exchange: Exchange, seconds: float) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "request_id": exchange.request_id,
        "route": exchange.route.spec.id if exchange.route else None,
        "instance": exchange.instance if exchange.attempts else None,
        "model": exchange.model,
        "status": exchange.status,
        "latency_ms": round(seconds * 1000, 3),
        "ttft_ms": None if exchange.ttft is None else round(exchange.ttft * 1000, 3),
        "tokens": exchange.usage,
        "consumer": exchange.consumer,
        "protocol": exchange.protocol.name,
    }
    if exchange.decision is not None:
        fields["semantic"] = {"pick": exchange.decision.pick, "reason": exchange.decision.reason,
                              "top_score": exchange.decision.top_score}
        if exchange.decision.context:  # conversation routing: each user turn's weight
            fields["semantic"]["context"] = list(exchange.decision.context)
    if exchange.shadow is not None:
        top = exchange.shadow.top_score
        fields["shadow_pick"] = exchange.shadow.pick
        fields["shadow_score"] = None if top is None else round(top, 4)
    if len(exchange.attempts) > 1:
        fields["failover"] = [f"{a.instance}:{a.outcome}" for a in exchange.attempts]
    route = exchange.route
    if route is not None and route.spec.logging.payloads:
        fields["request_body"] = _clip(orjson.dumps(exchange.payload))
        if exchange.response_body is not None:
            fields["response_body"] = _clip(exchange.response_body)
    return fields


def _clip(data: bytes) -> str:
    text = data[:MAX_LOGGED_PAYLOAD].decode("utf-8", "replace")
    return text + ("..." if len(data) > MAX_LOGGED_PAYLOAD else "")
