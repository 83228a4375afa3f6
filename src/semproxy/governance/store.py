"""The one small interface every counter store implements, and the spend ledger's.

A store keeps, per counter, the amount used and the amounts held: by workers'
leases (governance/lease.py: the request path's normal way, `sync`) and by
single reservations (`reserve`/`settle`: a request whose input cannot be
bounded, which also takes an exclusive marker so only one such request runs
against a limit at a time). Both kinds of hold expire (a process that dies
cannot hold a budget forever). `reserve` checks all of a request's holds and
places them in one atomic step or places none; `settle` replaces holds with
real use; `sync` reports a worker's use and resizes its leases and writes
ledger batches, all in one atomic step. Settles and ledger batches are
idempotent per id and lease reports are cumulative, so nothing retried after a
lost answer counts twice. The in-process, SQLite and Redis stores implement
exactly the same arithmetic (tests/governance run one suite against all three).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from semproxy.governance.lease import LeaseAsk, LeaseGrant
from semproxy.governance.model import Hold, Outcome, Settle


class StoreError(Exception):
    """The store could not answer (unreachable, timed out, locked, corrupt)."""


@dataclass(frozen=True, slots=True)
class SpendEntry:
    """Answered requests in the spend ledger: one, or `requests` of one route, instance,
    consumer, group and end user summed over a minute (how workers write it: syncer.py);
    `cost` in nanos (pricing.py)."""

    at: float
    route: str
    instance: str
    consumer: str
    group: str
    end_user: str
    input: int
    output: int
    cached_input: int
    cost: int
    requests: int = 1


@dataclass(frozen=True, slots=True)
class SpendRow:
    """Spend summed over one value of the asked dimension within the asked time range."""

    key: str
    requests: int
    input: int
    output: int
    cached_input: int
    cost: int


DIMENSIONS = ("consumer", "group", "route", "instance", "end_user")


class CounterStore(Protocol):
    name: str

    async def reserve(self, res_id: str, holds: Sequence[Hold], low: int, high: int,
                      lease_s: float, now: float) -> Outcome:
        """Place every hold with the largest output n in [low, high] that fits all, or none."""

    async def settle(self, res_id: str, settles: Sequence[Settle], now: float,
                     entry: SpendEntry | None = None) -> None:
        """Drop the reservation's holds, add the amounts used, record `entry` if given."""

    async def sync(self, worker: str, asks: Sequence[LeaseAsk],
                   batches: Sequence[tuple[str, Sequence[SpendEntry]]], lease_s: float,
                   now: float) -> list[LeaseGrant]:
        """Apply `asks` (lease.apply_ask) for `worker` and record each ledger batch once."""

    async def used(self, reads: Sequence[str], now: float) -> int:
        """Used plus held over these counters (a window's buckets): for reading, not admitting."""

    async def close(self) -> None: ...


class SpendLedger(Protocol):
    """Where answered requests are recorded and summed (SQLite, Redis or in-process)."""

    async def spend(self, dimension: str, since: float, until: float) -> list[SpendRow]:
        """Spend per value of `dimension` (one of DIMENSIONS) between two times."""


def sum_rows(entries: Iterable[SpendEntry], dimension: str) -> list[SpendRow]:
    """One row per value of `dimension`, most expensive first."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"dimension must be one of {', '.join(DIMENSIONS)}")
    sums: dict[str, list[int]] = {}
    for e in entries:
        row = sums.setdefault(getattr(e, dimension), [0, 0, 0, 0, 0])
        row[0] += e.requests
        row[1] += e.input
        row[2] += e.output
        row[3] += e.cached_input
        row[4] += e.cost
    rows = [SpendRow(k, *v) for k, v in sums.items()]
    return sorted(rows, key=lambda r: (-r.cost, r.key))
