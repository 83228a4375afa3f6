"""account: what a finished request leaves behind, whatever ended it.

After the answer (or the error), each phase's accounting half runs (a budget's
commit, a cache's store), then this: the request's metrics, its one access-log
line, and its shadow decision handed to the shadow runner.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from semproxy.governance.pricing import to_money
from semproxy.governance.tiers import BudgetChoice
from semproxy.observability.logging import log_line
from semproxy.observability.observer import shadow_fields
from semproxy.observability.tokens import token_counts
from semproxy.server.exchange import Exchange

access_log = logging.getLogger("semproxy.access")

MAX_LOGGED_PAYLOAD = 4096


def finish(exchange: Exchange) -> None:
    """Metrics and the access line of a finished request."""
    seconds = time.monotonic() - exchange.started
    route = exchange.route
    route_id = route.spec.id if route is not None else "-"
    attempts = exchange.attempts
    instance = attempts[-1].instance if attempts else "-"
    # Upstream tokens only: a cache hit's usage is what it saved (the cache's metrics).
    usage = exchange.usage if exchange.source == "upstream" else None
    exchange.observer.on_response(route_id, instance, exchange.status, seconds,
                                  exchange.ttft, usage, exchange.protocol.name)
    if wants_access_line(exchange):
        log_line(access_log, logging.INFO,
                 f"{route_id} {exchange.request_id} -> {instance} {exchange.status}",
                 access_fields(exchange, seconds))


def wants_access_line(exchange: Exchange) -> bool:
    """The access log is on (the default), or the route asks for its own lines.

    A route with APISIX `logging.summaries` or `logging.payloads` gets its line
    even when the access log is off (`serve --no-access-log`), as in APISIX where
    those settings are what turn logging on for a route.
    """
    route = exchange.route
    if route is not None:
        settings = route.spec.logging
        if settings.summaries or settings.payloads:
            return True
    return access_log.isEnabledFor(logging.INFO)


def access_fields(exchange: Exchange, seconds: float) -> dict[str, Any]:
    """The access line's fields (after `ts`, `level`, `logger` and `msg`), in their order."""
    route, attempts, ttft, decision = exchange.route, exchange.attempts, exchange.ttft, \
        exchange.decision
    fields: dict[str, Any] = {
        "request_id": exchange.request_id,
        "route": route.spec.id if route is not None else None,
        "instance": attempts[-1].instance if attempts else None,
        "model": exchange.model,
        "status": exchange.status,
        "latency_ms": round(seconds * 1000, 3),
        "ttft_ms": None if ttft is None else round(ttft * 1000, 3),
        "tokens": None if exchange.usage is None else token_counts(exchange.usage),
        "consumer": exchange.consumer,
        "protocol": exchange.protocol.name,
    }
    if decision is not None:
        fields["semantic"] = {"pick": decision.pick, "reason": decision.reason,
                              "top_score": decision.top_score}
        if decision.context:  # conversation routing: each user turn's weight
            fields["semantic"]["context"] = list(decision.context)
    if exchange.shadow is not None:
        fields.update(shadow_fields(exchange.shadow))
    if exchange.stream_error is not None:
        fields["stream_error"] = exchange.stream_error
    if exchange.cost is not None:  # a priced route: what the request cost, in money
        fields["cost"] = round(to_money(exchange.cost), 9)
    charged = exchange.charged
    if charged is not None and charged.estimated:  # the upstream reported no usage
        fields["charged_tokens"] = token_counts(charged)
    if exchange.budget is not None:
        fields["budget"] = budget_fields(exchange.budget)
    if exchange.cache is not None:
        fields["cache"] = exchange.cache.fields()
    if len(attempts) > 1:
        fields["failover"] = [f"{a.instance}:{a.outcome}" for a in attempts]
    if route is not None and route.spec.logging.payloads:
        parsed = exchange.parsed  # a shelved request is logged without parsing it back
        fields["request_body"] = _clip(b"null" if parsed is None else parsed.payload_json())
        if exchange.response_body is not None:
            fields["response_body"] = _clip(exchange.response_body)
    return fields


def budget_fields(choice: BudgetChoice) -> dict[str, Any]:
    """Budget-aware routing's reading of the decision (the access line, the playground)."""
    return {"tier": choice.tier, "pick": choice.pick, "served": choice.to,
            "strength": round(choice.strength, 4), "keep_margin": choice.keep_margin}


def _clip(data: bytes) -> str:
    text = data[:MAX_LOGGED_PAYLOAD].decode("utf-8", "replace")
    return text + ("..." if len(data) > MAX_LOGGED_PAYLOAD else "")
