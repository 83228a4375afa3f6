"""Governance's counters, as the metrics layer folds them in at scrape time.

Nothing here runs per request: stores' health (`StoreHealth`), lease syncers and
the governor keep plain integers as they go, and `counts` reads them into
name/labels/value rows when Prometheus scrapes, so a request never calls into
prometheus-client. Label values are bounded: store names come from the config
(`memory`, `sqlite`, `redis:<hash of the target>`), limit labels too.
"""

from __future__ import annotations

from dataclasses import dataclass

from semproxy.governance.governor import Governor

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Count:
    name: str
    help: str
    labels: Labels
    value: int


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
