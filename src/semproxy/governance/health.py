"""What happens when a store cannot answer: counted, logged at most once per interval,
and not asked again for a short while (so a dead Redis costs one timeout, not one per
request). The limit's `on_store_error` then decides: allow (the request goes on,
uncounted by that store) or deny (refused with 503)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger("semproxy.governance")


@dataclass(slots=True)
class StoreHealth:
    """Per store: errors seen and what the policy did with them (read by the metrics layer)."""

    name: str
    log_interval_s: float = 60.0
    retry_after_s: float = 1.0
    errors: int = 0
    allowed: int = 0
    denied: int = 0
    lost_settles: int = 0
    down_until: float = 0.0
    _logged_at: float = field(default=float("-inf"))
    _unlogged: int = 0

    def is_down(self, now: float) -> bool:
        return now < self.down_until

    def failed(self, now: float, error: Exception | str) -> None:
        self.errors += 1
        self.down_until = now + self.retry_after_s
        self._unlogged += 1
        if now - self._logged_at >= self.log_interval_s:
            log.warning("governance store %s failed %d time(s) since the last report: %s",
                        self.name, self._unlogged, error)
            self._logged_at = now
            self._unlogged = 0

    def recovered(self) -> None:
        self.down_until = 0.0

    def decided(self, deny: bool) -> None:
        if deny:
            self.denied += 1
        else:
            self.allowed += 1
