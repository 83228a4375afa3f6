"""What is limited and by how much: scopes, units, limits, and the holds a request places.

A limit counts one unit (requests, tokens, requests in flight, money) in one
scope (who or what shares the counter) over one window. Every limit that
applies to a request must pass. A request turns each applicable limit into a
`Hold`: an amount `fixed + per_output * n`, where n is the number of output
tokens granted, so one formula covers every unit and lets a store clamp n
(`clamp_max_tokens`) inside the same atomic step that checks the limits:

    requests         fixed 1                        per_output 0
    concurrent       fixed 1 (held, never used)     per_output 0
    input tokens     fixed = estimated input        per_output 0
    output tokens    fixed 0                        per_output 1
    total tokens     fixed = input bound            per_output 1
    money            fixed = input * input price    per_output = output price
    expression       fixed = the expression's upper bound (cost_expr.py)  per_output 0

"input" is the request's input bound (governance/tokens.py `input_bound`): never
under what a byte-level BPE tokenizer counts, so no hold is short of what its
answer then uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from semproxy.governance.cost_expr import CostExpr
from semproxy.governance.pricing import Price
from semproxy.governance.windows import Window


class Scope(StrEnum):
    """Who shares a counter. `key` is an APISIX `rules[].key` resolved per request."""

    CONSUMER = "consumer"
    GROUP = "consumer_group"
    ROUTE = "route"
    INSTANCE = "instance"
    END_USER = "end_user"
    KEY = "key"


class Unit(StrEnum):
    REQUESTS = "requests"
    INPUT_TOKENS = "input_tokens"
    OUTPUT_TOKENS = "output_tokens"
    TOTAL_TOKENS = "total_tokens"
    CONCURRENT = "concurrent"
    MONEY = "money"
    EXPRESSION = "expression"  # APISIX limit_strategy expression: what cost_expr counts

    @property
    def is_tokens(self) -> bool:
        return self in _TOKEN_UNITS

    @property
    def follows_input(self) -> bool:
        """Whether a hold of this unit depends on the input bound (serialised when unproven)."""
        return self in _INPUT_UNITS


# Members as module names: on Python 3.11 `Unit.MONEY` goes through EnumType.__getattr__
# (about 0.2 us a read), which the per-request methods below cannot afford.
_REQUESTS, _INPUT, _OUTPUT, _TOTAL, _CONCURRENT, _MONEY, _EXPRESSION = (
    Unit.REQUESTS, Unit.INPUT_TOKENS, Unit.OUTPUT_TOKENS, Unit.TOTAL_TOKENS, Unit.CONCURRENT,
    Unit.MONEY, Unit.EXPRESSION)
# Tuples, not sets: `in` finds a member by identity, a set would hash it in Python.
_TOKEN_UNITS = (_INPUT, _OUTPUT, _TOTAL)
_INPUT_UNITS = (_INPUT, _TOTAL, _MONEY, _EXPRESSION)


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit as configured. `id` names its counters in every store, so it must not
    change across reloads unless the limit's meaning does (then counting starts anew).

    `label` names it in answers (headers, refusal messages); `instance` is set when
    the limit belongs to one instance of a route (checked in the failover loop);
    `key` is the template of a `Scope.KEY` limit. `rejected_code` and
    `rejected_msg` are the APISIX fields for what a refusal answers; `quota_headers`
    is `show_limit_quota_header`; `deny_on_store_error` is the store-error policy.
    """

    id: str
    scope: Scope
    unit: Unit
    amount: int
    window: Window
    store: str
    label: str
    deny_on_store_error: bool = True
    instance: str | None = None
    key: str | None = None
    rejected_code: int = 429
    rejected_msg: str | None = None
    quota_headers: bool = False
    apisix: bool = False  # an APISIX ai-rate-limiting limit (its header names)
    tiers: tuple[float, ...] = ()
    cost: CostExpr | None = None  # the expression of a Unit.EXPRESSION limit

    @property
    def keeps_expired(self) -> bool:
        """Whether a lease that expires unsynced counts as used (its holder died with
        unreported use); concurrency frees it instead (nothing is ever used)."""
        return self.unit is not _CONCURRENT

    def shape(self, input_tokens: int, price: Price, output: int = 0) -> tuple[int, int]:
        """(fixed, per_output) of this limit for a request of `input_tokens` that may
        answer up to `output` tokens (only an expression's bound needs it)."""
        unit = self.unit
        if unit is _REQUESTS or unit is _CONCURRENT:
            return 1, 0
        if unit is _INPUT:
            return input_tokens, 0
        if unit is _OUTPUT:
            return 0, 1
        if unit is _TOTAL:
            return input_tokens, 1
        if unit is _EXPRESSION:
            assert self.cost is not None
            return self.cost.upper(input_tokens, output), 0
        return input_tokens * price.input, price.output

    def charge(self, input_tokens: int, output_tokens: int, cost: int) -> int:
        """What the answer really used, in this limit's unit (0 for concurrency)."""
        unit = self.unit
        if unit is _MONEY:
            return cost
        if unit is _TOTAL:
            return input_tokens + output_tokens
        if unit is _REQUESTS:
            return 1
        if unit is _CONCURRENT:
            return 0
        if unit is _INPUT:
            return input_tokens
        if unit is _OUTPUT:
            return output_tokens
        return cost


@dataclass(frozen=True, slots=True)
class Hold:
    """One limit's part of a reservation, in store terms.

    The store admits it when `sum(used + held over reads) + fixed + per_output * n
    <= limit`, and then holds that amount on `counter` (the current bucket).
    """

    counter: str
    reads: tuple[str, ...]
    limit: int
    fixed: int
    per_output: int
    ttl_s: int
    exclusive: str = ""  # a marker only one reservation at a time may hold ("": none)


@dataclass(frozen=True, slots=True)
class Settle:
    """Turn a hold into use: drop the hold on `counter`, add `amount` to its use
    (and let go of the `exclusive` marker the hold took)."""

    counter: str
    amount: int
    ttl_s: int
    exclusive: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A store's answer to a reservation.

    Granted: `output` tokens were granted (between the asked minimum and maximum)
    and `remaining[i]` is what hold i leaves. Refused: `refused` is the index of the
    first hold that did not fit and `remaining` holds what it had left.
    """

    granted: bool
    output: int
    remaining: tuple[int, ...]
    refused: int = -1
    busy: bool = False  # refused because another reservation holds the hold's marker


def fit(holds: tuple[Hold, ...] | list[Hold], totals: list[int], low: int, high: int) -> Outcome:
    """The admission rule, given each hold's current use (`totals[i]`, used + held).

    The largest n in [low, high] with totals[i] + fixed + per_output * n <= limit for
    every hold; refused at the first hold that cannot take even `low`. The Redis
    script (reserve.lua) is this same function in Lua.
    """
    out = high
    for i, (hold, total) in enumerate(zip(holds, totals, strict=True)):
        free = hold.limit - total - hold.fixed
        if free < 0 or free < hold.per_output * low:
            return Outcome(False, 0, (hold.limit - total,), refused=i)
        if hold.per_output:
            out = min(out, free // hold.per_output)
    left = tuple(hold.limit - total - hold.fixed - hold.per_output * out
                 for hold, total in zip(holds, totals, strict=True))
    return Outcome(True, out, left)
