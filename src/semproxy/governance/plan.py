"""The governance plan: a config version's limits, prices and stores, frozen.

A request only reads it. config/limits_plan.py compiles it from the config
(checking what the schema alone cannot, each problem at its field path); this
module holds the plan's types and how a rule's key template is filled in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from semproxy.governance.model import Limit
from semproxy.governance.pricing import Price
from semproxy.governance.redis_store import RedisTarget

KEY_VAR = re.compile(r"\$\{?([A-Za-z0-9_]+)\}?")  # `$consumer_name`, `${http_x_team}`


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """A store the plan needs: `memory`, `sqlite` (the file) or `redis` (its target)."""

    kind: str
    path: str | None = None
    redis: RedisTarget | None = None


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """What the `governance` block sets for the stores and admission (its meaning and
    defaults: config/limits.py `Governance`)."""

    reservation_lease: float = 900.0
    sync_interval: float = 0.25
    image_tokens: int = 4096
    unbounded_input_wait: float = 2.0
    store_error_log_interval: float = 60.0
    store_retry_after: float = 1.0


@dataclass(frozen=True, slots=True)
class RoutePolicy:
    """The limits of one route. `admit` are checked at admission; `instances[name]` in the
    failover loop before an instance is tried (an instance over quota is skipped)."""

    route: str
    admit: tuple[Limit, ...]
    instances: Mapping[str, tuple[Limit, ...]]
    prices: Mapping[str, Price]
    worst_price: Price
    default_max_tokens: int | None = None
    clamp: bool = False
    clamp_min: int = 1

    def price(self, instance: str | None) -> Price:
        return self.prices.get(instance, self.worst_price) if instance else self.worst_price


@dataclass(frozen=True, slots=True)
class GovernancePlan:
    routes: Mapping[str, RoutePolicy]
    consumers: Mapping[str, tuple[Limit, ...]]
    groups: Mapping[str, tuple[Limit, ...]]
    group_of: Mapping[str, str]
    stores: Mapping[str, StoreSpec]
    ledger: str | None
    settings: PlanSettings = field(default_factory=PlanSettings)

    def policy(self, route: str) -> RoutePolicy | None:
        return self.routes.get(route)

    def is_empty(self) -> bool:
        return not (self.routes or self.consumers or self.groups)


def key_vars(template: str) -> list[str]:
    """The variables an APISIX key template names (`$consumer_name`, `${http_x_team}`)."""
    return KEY_VAR.findall(template)


def resolve_key(template: str, var: Callable[[str], str | None]) -> str | None:
    """The template with its variables filled in; None when none of them has a value
    (APISIX: such a rule does not apply to the request)."""
    resolved = 0

    def fill(match: re.Match[str]) -> str:
        nonlocal resolved
        value = var(match.group(1))
        if value:
            resolved += 1
        return value or ""

    text = KEY_VAR.sub(fill, template)
    return text if resolved else None
