"""admit: limits and budgets, before the route decision (spend governance, governance/).

`admission_for` gives a route its `LimitAdmission` when a limit, a budget or a
price can apply to its requests (the route's own `ai-rate-limiting` or prices,
or a consumer's or group's limits on a route with key-auth); any other route
has no admit phase and pays nothing. Both halves of the phase:

- `run` reserves the request's worst case (`Governor.reserve`: the input bound
  of the body and its `max_tokens`, or the route's default) before the route
  decision. Over a limit it raises `LimitRefused`: 429 (or the APISIX
  `rejected_code`) in the client's protocol, with `Retry-After`. It writes a
  lowered or defaulted `max_tokens` into the body sent upstream (the Chat form
  and the client's own, for native instances), adds the protocol's rate-limit
  headers to every answer (`exchange.headers`), keeps instances out of their
  own quota out of the failover loop with a `QuotaGate`, and, for a stream,
  registers a `TextTap` (server/charge.py) so a cut stream is charged for what
  was generated.
- `account` runs after the answer, whatever ended the request: it commits the
  usage the answer reported, or an estimate (server/charge.py), at the price of
  the instance that answered; a cache hit commits the request with no tokens and
  no money; a request that reached no upstream gives its holds back.

A client cannot raise its own limit: amounts come from the config only (a
variable in a count is refused by validate), the consumer from its key, and a
larger `max_tokens` only makes the hold larger.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from semproxy.errors import GatewayError
from semproxy.governance.answers import limit_headers, refusal_answer
from semproxy.governance.counts import SpendCounts
from semproxy.governance.governor import Governor, RequestFacts, no_vars
from semproxy.governance.plan import GovernancePlan
from semproxy.governance.reservation import Refusal, Reservation
from semproxy.governance.tokens import input_bound
from semproxy.runtime.routes import RouteState
from semproxy.server.charge import (
    TextTap,
    account_now,
    account_reservation,
    has_expression,
    request_vars,
)
from semproxy.server.exchange import Answer, Exchange


class Admission(Protocol):
    """One route's admission for one config version (the admit phase and its accounting)."""

    async def run(self, exchange: Exchange) -> Answer | None:
        """Reserve, refuse (raise) or clamp; always None: admission answers no request."""

    async def account(self, exchange: Exchange) -> None:
        """Commit the usage of the answer, or release the reservation."""


class LimitRefused(GatewayError):
    """A refusal by a limit or budget, in the words `governance/answers.py` chose."""

    def __init__(self, refusal: Refusal, protocol: str, headers: dict[str, str]) -> None:
        answer = refusal_answer(refusal, protocol)
        super().__init__(answer.message, headers={**headers, **dict(answer.headers)})
        self.status = answer.status
        self.type = answer.type
        self.code = answer.code or answer.type  # Anthropic's shape has no code


class GovernedVersion:
    """The governor of one config version and its requests in flight (so stores the next
    version drops are closed only once the last request of this one is accounted)."""

    def __init__(self, governor: Governor, spend: SpendCounts) -> None:
        self.governor = governor
        self.spend = spend
        self.active = 0


def needs_admission(route: RouteState, plan: GovernancePlan) -> bool:
    """A limit, budget or price can apply to the route's requests."""
    if plan.policy(route.spec.id) is not None:
        return True
    return route.spec.key_auth is not None and bool(plan.consumers or plan.groups)


def admission_for(route: RouteState, governed: GovernedVersion | None) -> Admission | None:
    """The admission of `route`, None while no limit, budget or price applies to it."""
    if governed is None or not needs_admission(route, governed.governor.plan):
        return None
    return LimitAdmission(route, governed)


def reads_vars(route: RouteState, plan: GovernancePlan) -> bool:
    """The route's limits read request variables (APISIX `rules[].key`)."""
    policy = plan.policy(route.spec.id)
    return policy is not None and any(limit.key is not None for limit in policy.admit)


class LimitAdmission:
    def __init__(self, route: RouteState, governed: GovernedVersion) -> None:
        self.route = route
        self.route_id = route.spec.id
        self.governed = governed
        self.governor = governor = governed.governor
        plan = governor.plan
        self.policy = plan.policy(route.spec.id)
        self.image_tokens = plan.settings.image_tokens
        self.gated = self.policy is not None and any(self.policy.instances.values())
        self.expression = self.policy is not None and has_expression(self.policy)
        self.reads_vars = reads_vars(route, plan)

    async def run(self, exchange: Exchange) -> Answer | None:
        parsed = exchange.parsed
        assert parsed is not None
        body = parsed.payload or parsed.native or {}
        bound = input_bound(body, self.image_tokens)
        proven = bound.proven and parsed.unsupported is None
        protocol = exchange.protocol.name
        asked = asked_max_tokens(body, protocol)
        var = request_vars(exchange) if self.reads_vars else no_vars
        res = self.governor.reserve_now(self.route_id, exchange.consumer, exchange.end_user(),
                                        bound.tokens, asked, var, proven)
        if res is None:  # a lease to sync first, or an input without a proven bound
            res = await self.governor.reserve(RequestFacts(
                self.route_id, exchange.consumer, exchange.end_user(), bound.tokens, asked,
                var, proven))
        if res.refusal is not None:
            headers = dict(limit_headers(res.readings, protocol, time.time()))
            raise LimitRefused(res.refusal, protocol, headers)
        exchange.reservation = res
        self.governed.active += 1
        if res.max_tokens is not None:
            write_max_tokens(parsed.payload, parsed.native, protocol, res.max_tokens)
        if res.readings:
            headers = dict(limit_headers(res.readings, protocol, time.time()))
            exchange.headers = headers if exchange.headers is None \
                else {**exchange.headers, **headers}
        if self.gated:
            exchange.gates = [QuotaGate(self.governor, res)]
        if body.get("stream") is True:
            exchange.taps = [*(exchange.taps or ()), TextTap()]
        return None

    async def account(self, exchange: Exchange) -> None:
        res = exchange.reservation
        if res is None:
            return  # refused, or ended before admission
        try:
            done, usage = account_now(self.governor, self.policy, self.expression, exchange,
                                      res)
            if not done:
                usage = await account_reservation(self.governor, self.policy, self.expression,
                                                  exchange, res)
            if usage is not None:
                self.governed.spend.add(exchange.consumer, self.route_id,
                                        exchange.instance, usage, exchange.cost or 0)
        finally:
            self.governed.active -= 1


class QuotaGate:
    """An instance over its own quota (APISIX `instances[]`, `limit`) is skipped like an
    unhealthy one; when none is left the last such refusal answers the request."""

    def __init__(self, governor: Governor, res: Reservation) -> None:
        self.governor = governor
        self.res = res

    async def allows(self, exchange: Exchange, instance: str) -> bool:
        res = self.res
        allowed = await self.governor.reserve_instance(res, instance)
        protocol = exchange.protocol.name
        headers = dict(limit_headers(res.readings, protocol, time.time()))
        if allowed:
            exchange.headers = {**(exchange.headers or {}), **headers}
        elif res.skipped is not None:
            exchange.refusal = LimitRefused(res.skipped, protocol, headers)
        return allowed


# Where each protocol keeps the answer's token cap (Chat: either name, as the client wrote).
_CAP_KEYS = {"messages": "max_tokens", "responses": "max_output_tokens"}


def asked_max_tokens(body: dict[str, Any], protocol: str) -> int | None:
    """The client's cap on the answer, None when it set none (or none that is a count)."""
    for key in ("max_completion_tokens", "max_tokens", _CAP_KEYS.get(protocol, "max_tokens")):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def write_max_tokens(payload: dict[str, Any], native: dict[str, Any] | None, protocol: str,
                     granted: int) -> None:
    """The granted cap into the Chat form and into the client's own body (what a native
    instance gets), under the name each already uses."""
    if payload:
        payload["max_completion_tokens" if "max_completion_tokens" in payload
                else "max_tokens"] = granted
    if native is not None and native is not payload:
        native[_CAP_KEYS.get(protocol, "max_tokens")] = granted
