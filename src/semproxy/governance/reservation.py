"""What admission decided for one request: the holds placed, the tokens granted, or a refusal.

The admit phase gets one `Reservation` from `Governor.reserve`, the failover loop
adds an instance's quota to it (`Governor.reserve_instance`), and the account
phase settles it (`Governor.commit` with the answer's usage, or
`Governor.release` when nothing reached an upstream). The answer phases read it
for headers (`readings`) and a refused request's answer (`refusal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple

from semproxy.governance.model import Limit, Unit

if TYPE_CHECKING:
    from semproxy.governance.lease import Lease

Reason = Literal["rate", "quota", "store"]


class Reading(NamedTuple):
    """One limit as this request left it: for the rate-limit headers of the answer.
    (A named tuple: as immutable as a frozen dataclass, and made several times faster,
    two or more per request.)"""

    limit: Limit
    remaining: int
    reset_s: float
    instance: str | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused. `reason`: rate (a window that resets), quota (a money
    budget spent: OpenAI's insufficient_quota) or store (the store failed and the
    limit's policy is deny: 503)."""

    limit: Limit
    reason: Reason
    status: int
    retry_after_s: float
    remaining: int
    message: str
    busy: bool = False  # another request without a proven input bound held the limit's turn


class Placed(NamedTuple):
    """One hold a request placed (never changed: settling reads it). A named tuple, as
    immutable as it is used, and cheap to make (one per limit and request)."""

    limit: Limit
    store: str
    owner: str  # the id the hold was placed under (one per reserve step)
    counter: str
    ttl_s: int
    held: bool  # False: the store failed and the policy let the request through
    amount: int = 0
    lease: Lease | None = None  # the worker's lease it was placed in; None: a reservation
    marker: str = ""  # the exclusive marker a reservation took


@dataclass(slots=True)
class Reservation:
    id: str
    route: str
    consumer: str | None
    group: str | None
    end_user: str | None
    input_tokens: int
    output: int  # output tokens granted (max_tokens as reserved)
    max_tokens: int | None = None  # to write into the upstream body; None: leave it
    refusal: Refusal | None = None
    skipped: Refusal | None = None  # the last instance quota that made the loop skip one
    instance: str | None = None
    placed: list[Placed] = field(default_factory=list)
    readings: list[Reading] = field(default_factory=list)
    budget_fraction: float = 0.0  # the largest share of a money budget now used or held
    tier: int = 0  # the most tiers any of its money budgets has crossed
    settled: bool = False
    steps: int = 0
    proven: bool = True  # the input bound is proven (else: single reservations, exclusive)
    turns: tuple[str, ...] = ()  # exclusive markers whose turn this request holds
    cost: int = 0  # nanos the commit charged (at the answering instance's price)

    def next_step(self) -> str:
        self.steps += 1
        return f"{self.id}.{self.steps}"

    @property
    def is_refused(self) -> bool:
        return self.refusal is not None

    def placed_for_instance(self) -> list[Placed]:
        return [p for p in self.placed if p.limit.instance is not None]


def refusal_for(limit: Limit, remaining: int, reset_s: float) -> Refusal:
    """The refusal of a limit that did not fit (a money budget is a quota, not a rate)."""
    reason: Reason = "quota" if limit.unit is Unit.MONEY else "rate"
    message = limit.rejected_msg or _message(limit, reason)
    return Refusal(limit, reason, limit.rejected_code, max(reset_s, 0.0), remaining, message)


def _message(limit: Limit, reason: Reason) -> str:
    what = "budget" if reason == "quota" else f"{limit.unit.value.replace('_', ' ')} limit"
    return (f"{limit.scope.value.replace('_', ' ')} {what} {limit.label!r} reached "
            f"({limit.window.describe()})")
