"""What a governed request is charged, and the request variables its limits read.

The account half of the admit phase (server/admit.py) settles a reservation:

- a cache hit (`exchange.source` is not "upstream") commits the request with no
  tokens and no money: the cache's own metrics count what it saved;
- a request that reached no upstream (refused before the call, or every attempt
  failed to connect) gives its holds back;
- otherwise the usage the answer reported is committed at the price of the
  instance that answered. Where the upstream reported none (a stream the client
  left, or that broke, before its usage event; a provider that sends none) the
  charge is an upper bound, marked `estimated`: the input bound admission held
  (or the input the upstream reported) and, for output, the UTF-8 bytes of the
  text generated (`TextTap` counts a stream's as it passes), at most the output
  granted. A byte-level tokenizer never makes more tokens than bytes, so a cut
  stream is never charged less than it used and the budget's one-request bound
  still holds; an upstream error answer counts the request with no tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from semproxy.governance.governor import Governor
from semproxy.governance.model import Unit
from semproxy.governance.plan import RoutePolicy
from semproxy.governance.reservation import Reservation
from semproxy.protocols.events import decoded
from semproxy.server.exchange import Exchange
from semproxy.types import Usage

NOTHING = Usage()
# Where generated text sits in answers and stream events of every protocol: Chat
# (`content`, tool call `arguments`, `reasoning_content`, `refusal`), Messages (`text`,
# `partial_json`, `thinking`), Responses (`text`, `delta`, `arguments`).
TEXT_KEYS = frozenset({"content", "text", "arguments", "partial_json", "thinking",
                       "reasoning_content", "refusal", "delta"})


class TextTap:
    """Counts the UTF-8 bytes of the text a stream generates, as its events pass."""

    __slots__ = ("generated",)

    def __init__(self) -> None:
        self.generated = 0

    def events(self, data: bytes, protocol: str) -> None:
        for event in decoded(data):
            if event is not None:
                self.generated += text_bytes(event)

    def end(self, usage: Usage | None, complete: bool) -> None:
        """Nothing to do: the account phase reads `generated` when it needs it."""


def text_bytes(node: Any) -> int:
    """The UTF-8 bytes of every generated text in an answer or an event."""
    total = 0
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, str):
                    if key in TEXT_KEYS:
                        total += len(value.encode("utf-8", "surrogatepass"))
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))
    return total


async def account_reservation(governor: Governor, policy: RoutePolicy | None, expression: bool,
                              exchange: Exchange, res: Reservation) -> Usage | None:
    """Settle `res` for what ended `exchange`; the usage charged (None: given back)."""
    if exchange.source != "upstream":
        await governor.commit(res, NOTHING)
        exchange.cost = 0
        return None
    if not reached_upstream(exchange):
        await governor.release(res)
        return None
    usage = charged_usage(exchange, res)
    instance = exchange.attempts[-1].instance
    await governor.commit(res, usage, instance, raw_usage(exchange) if expression else None)
    _charged(policy, exchange, res, usage)
    return usage


def account_now(governor: Governor, policy: RoutePolicy | None, expression: bool,
                exchange: Exchange, res: Reservation) -> tuple[bool, Usage | None]:
    """`account_reservation` without an await for an upstream's answer whose holds are all
    in leases (the usual case): (True, the usage charged); (False, None): nothing was done."""
    if exchange.source != "upstream" or not reached_upstream(exchange):
        return False, None
    usage = charged_usage(exchange, res)
    if not governor.commit_now(res, usage, exchange.attempts[-1].instance,
                               raw_usage(exchange) if expression else None):
        return False, None
    _charged(policy, exchange, res, usage)
    return True, usage


def _charged(policy: RoutePolicy | None, exchange: Exchange, res: Reservation,
             usage: Usage) -> None:
    if policy is not None and policy.prices:
        exchange.cost = res.cost  # the commit priced it at the answering instance
    exchange.charged = usage


def reached_upstream(exchange: Exchange) -> bool:
    """An attempt that may have reached an upstream (only a refused connection did not)."""
    for attempt in exchange.attempts:  # noqa: SIM110 (a loop makes no generator per request)
        if attempt.outcome != "connect":
            return True
    return False


def charged_usage(exchange: Exchange, res: Reservation) -> Usage:
    usage = exchange.usage
    if usage is not None and exchange.complete:
        return usage
    if exchange.status >= 400 or exchange.leg is None:
        return usage or NOTHING  # an error answer: nothing was generated
    taps = exchange.taps or ()
    tap = next((t for t in taps if isinstance(t, TextTap)), None)
    generated = tap.generated if tap is not None else _body_text(exchange.response_body)
    given = usage.input if usage is not None and usage.input else res.input_tokens
    made = max(usage.output if usage is not None else 0, min(generated, res.output))
    cached = usage.cached_input if usage is not None else 0
    return Usage(given, made, cached, estimated=True)


def _body_text(body: bytes | None) -> int:
    try:
        return text_bytes(orjson.loads(body)) if body else 0
    except orjson.JSONDecodeError:
        return len(body or b"")


def raw_usage(exchange: Exchange) -> Mapping[str, Any] | None:
    """The answer's own usage object, for `cost_expr` fields beyond `Usage` (whole answers
    only: a stream's usage is read by its converter)."""
    body = exchange.response_body
    if not body or b'"usage"' not in body:
        return None
    try:
        found = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    usage = found.get("usage") if isinstance(found, dict) else None
    return usage if isinstance(usage, dict) else None


def request_vars(exchange: Exchange) -> Callable[[str], str | None]:
    """APISIX variables for `rules[].key`: `consumer_name`, `route_id`, `remote_addr`,
    `host`, `uri`, `http_<header>` and `arg_<query parameter>`."""
    request, consumer = exchange.http, exchange.consumer
    route = exchange.route.spec.id if exchange.route is not None else None

    def var(name: str) -> str | None:
        if name == "consumer_name":
            return consumer
        if name == "route_id":
            return route
        if request is None:
            return None
        if name.startswith("http_"):
            return request.headers.get(name[5:].replace("_", "-"))
        if name.startswith("arg_"):
            return request.query.get(name[4:])
        return {"remote_addr": request.remote, "host": request.host,
                "uri": request.path}.get(name)
    return var


def has_expression(policy: RoutePolicy) -> bool:
    return any(limit.unit is Unit.EXPRESSION for limit in policy.admit) or any(
        limit.unit is Unit.EXPRESSION for limits in policy.instances.values()
        for limit in limits)
