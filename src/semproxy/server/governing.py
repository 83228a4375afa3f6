"""The gateway's spend governance across config versions: one governor per version, the
stores and their leases kept from one version to the next.

A reload builds the new version's governor on the stores the old one had
(`StoreSet.for_plan` keeps every store whose spec is the same, with its
leases, health and pending reports) and shares its refusal counts and turns,
so limits and budgets change without a request counted twice or lost. Stores
the new version no longer names are closed (flushing what they hold) once the
old version's last request is accounted, or after the shutdown grace period.
Spend counts (`SpendCounts`) live here, for the life of the process.
"""

from __future__ import annotations

import asyncio
import logging
import time

from semproxy.governance.counts import Count, SpendCounts, counts
from semproxy.governance.governor import Governor
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.plan import GovernancePlan
from semproxy.server.admit import GovernedVersion

log = logging.getLogger("semproxy.governance")
DRAIN_POLL_S = 0.05


class Governance:
    def __init__(self) -> None:
        self.current: GovernedVersion | None = None
        self.spend = SpendCounts()
        self._retiring: set[asyncio.Task[None]] = set()

    def prepare(self, plan: GovernancePlan | None) -> GovernedVersion | None:
        """The governor of a new version (not serving until `activate`)."""
        if plan is None or plan.is_empty():
            return None
        previous = self.current.governor if self.current is not None else None
        stores = StoreSet.for_plan(plan, previous.stores if previous is not None else None)
        return GovernedVersion(Governor(plan, stores, previous=previous), self.spend)

    def activate(self, governed: GovernedVersion | None, grace_s: float) -> None:
        """`governed` serves from now on; the old version's dropped stores close once its
        requests are accounted (at most `grace_s` later)."""
        old, self.current = self.current, governed
        if old is None or old is governed:
            return
        task = asyncio.get_running_loop().create_task(self._retire(old, governed, grace_s))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def _retire(self, old: GovernedVersion, new: GovernedVersion | None,
                      grace_s: float) -> None:
        deadline = time.monotonic() + grace_s
        while old.active > 0 and time.monotonic() < deadline:
            await asyncio.sleep(DRAIN_POLL_S)
        keep = new.governor.stores if new is not None else None
        try:
            await old.governor.stores.close(keep)
        except Exception:  # a store that fails to close must not stop the next reload
            log.exception("closing the stores of an earlier config version failed")

    def counts(self) -> list[Count]:
        """Spend and the current governor's counters, for the metrics at scrape time."""
        rows = self.spend.counts()
        if self.current is not None:
            rows += counts(self.current.governor)
        return rows

    async def aclose(self) -> None:
        """Flush and close every store (shutdown: the requests have drained)."""
        # The requests have drained, so an old version's stores close at once.
        await asyncio.gather(*self._retiring, return_exceptions=True)
        if self.current is not None:
            await self.current.governor.stores.close()
            self.current = None
