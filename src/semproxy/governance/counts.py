"""Governance's counters, as the metrics layer folds them in at scrape time.

Nothing here runs per request but a few integer additions: stores' health
(`StoreHealth`), lease syncers, the governor and `SpendCounts` keep plain
integers as they go, and `counts` reads them into name/labels/value rows when
Prometheus scrapes, so a request never calls into prometheus-client.

Label values are bounded: store names come from the config (`memory`,
`sqlite`, `redis:<hash of the target>`), limit labels, routes and instances too.
Consumers are the configured ones (only an authenticated consumer has a name),
and past `MAX_CONSUMERS` distinct names in one process the rest count as
`other`; a request without a consumer counts as `-`. End users (`user`, set by
the client) are never a label.
"""

from __future__ import annotations

from dataclasses import dataclass

from semproxy.governance.governor import Governor
from semproxy.governance.pricing import to_money
from semproxy.types import Usage

Labels = tuple[tuple[str, str], ...]
MAX_CONSUMERS = 500
OTHER, ANONYMOUS = "other", "-"
TOKEN_KINDS = ("input", "output", "cached_input")


@dataclass(frozen=True, slots=True)
class Count:
    name: str
    help: str
    labels: Labels
    value: float


class SpendCounts:
    """What requests used, by (consumer, route, instance): tokens, money (nanos), requests.

    One per process, kept across config versions (counters only grow)."""

    def __init__(self, max_consumers: int = MAX_CONSUMERS) -> None:
        self.rows: dict[tuple[str, str, str], list[int]] = {}  # input, output, cached, nanos
        self._max = max_consumers
        self._named: set[str] = set()

    def add(self, consumer: str | None, route: str, instance: str, usage: Usage,
            cost: int) -> None:
        key = (self._label(consumer), route, instance)
        row = self.rows.get(key)
        if row is None:
            self.rows[key] = [usage.input, usage.output, usage.cached_input, cost]
        else:
            row[0] += usage.input
            row[1] += usage.output
            row[2] += usage.cached_input
            row[3] += cost

    def _label(self, consumer: str | None) -> str:
        if consumer is None:
            return ANONYMOUS
        if consumer in self._named:
            return consumer
        if len(self._named) < self._max:
            self._named.add(consumer)
            return consumer
        return OTHER

    def counts(self) -> list[Count]:
        rows: list[Count] = []
        for (consumer, route, instance), (given, made, cached, nanos) in sorted(
                self.rows.items()):
            labels = (("consumer", consumer), ("route", route), ("instance", instance))
            for kind, value in zip(TOKEN_KINDS, (given, made, cached), strict=True):
                rows.append(Count("semproxy_spend_tokens_total",
                                  "Tokens charged to budgets and limits (input counts cached "
                                  "input too), by consumer, route and instance",
                                  (*labels, ("kind", kind)), value))
            rows.append(Count("semproxy_spend_money_total",
                              "Money charged (prices per million tokens from the instances' "
                              "pricing), by consumer, route and instance",
                              labels, to_money(nanos)))
        return rows


def counts(gov: Governor) -> list[Count]:
    """Every counter now: per store its errors, the on_store_error decisions taken,
    settles lost while it was down and sync calls made; per limit its refusals."""
    rows: list[Count] = []
    for health in gov.stores.healths():
        store = (("store", health.name),)
        rows += [
            Count("semproxy_governance_store_errors_total",
                  "Calls to a limit store that failed", store, health.errors),
            Count("semproxy_governance_store_decisions_total",
                  "Requests decided by on_store_error while a store was unreachable",
                  (*store, ("decision", "allow")), health.allowed),
            Count("semproxy_governance_store_decisions_total",
                  "Requests decided by on_store_error while a store was unreachable",
                  (*store, ("decision", "deny")), health.denied),
            Count("semproxy_governance_lost_settles_total",
                  "Usage reports dropped after a store stayed unreachable too long",
                  store, health.lost_settles)]
    for syncer in gov.stores.syncers():
        rows.append(Count("semproxy_governance_syncs_total",
                          "Lease syncs sent to a limit store (one call each)",
                          (("store", syncer.health.name),), syncer.syncs))
    for (label, reason), value in sorted(gov.refusals.items()):
        rows.append(Count("semproxy_governance_refusals_total",
                          "Refusals by a limit or budget (skipped: an instance passed over)",
                          (("limit", label), ("reason", reason)), value))
    return rows
