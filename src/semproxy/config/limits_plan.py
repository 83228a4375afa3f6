"""The governance plan of a config version: its limits, prices and stores, compiled once.

A request only reads the frozen plan (`governance.plan.GovernancePlan`). The
compile checks what the schema alone cannot (a money budget needs prices, a
policy needs its Redis fields, an APISIX variable in a count is refused) and
reports each problem at its field path, like every other config error. It lives
in config/ because it is part of validating a version; what it produces is
governance's own vocabulary, which config/ may use (governance/ imports no
config).
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from semproxy.config import limits as c
from semproxy.config import schema as s
from semproxy.config.limit_rules import apisix_limits, own_limits, store_of
from semproxy.governance.model import Limit, Scope, Unit
from semproxy.governance.plan import GovernancePlan, PlanSettings, RoutePolicy, StoreSpec
from semproxy.governance.pricing import FREE, Price
from semproxy.governance.redis_store import RedisTarget

Report = Callable[[str, str], None]  # (field path, message)


def compile_plan(raw: s.Root, report: Report) -> GovernancePlan:
    stores: dict[str, StoreSpec] = {}
    routes: dict[str, RoutePolicy] = {}
    for i, route in enumerate(raw.routes):
        policy = _route(route, f"routes[{i}]", stores, raw.governance, report)
        if policy is not None:
            routes[route.id] = policy
    groups_known = {g.id for g in raw.consumer_groups}
    consumers: dict[str, tuple[Limit, ...]] = {}
    group_of: dict[str, str] = {}
    for i, consumer in enumerate(raw.consumers):
        path = f"consumers[{i}]"
        if consumer.group_id is not None:
            if consumer.group_id not in groups_known:
                report(f"{path}.group_id", f"no consumer group {consumer.group_id!r}")
            group_of[consumer.username] = consumer.group_id
        conf = consumer.plugins.ai_rate_limiting
        if conf is not None:
            consumers[consumer.username] = _owned(
                conf, f"{path}.plugins.ai-rate-limiting", f"consumer:{consumer.username}",
                Scope.CONSUMER, stores, raw.governance, report)
    groups = {g.id: _owned(g.plugins.ai_rate_limiting, f"consumer_groups[{i}].plugins."
                           "ai-rate-limiting", f"group:{g.id}", Scope.GROUP, stores,
                           raw.governance, report)
              for i, g in enumerate(raw.consumer_groups) if g.plugins.ai_rate_limiting}
    ledger = _ledger(raw.governance, stores) if (routes or consumers or groups) else None
    return GovernancePlan(MappingProxyType(routes), MappingProxyType(consumers),
                          MappingProxyType(groups), MappingProxyType(group_of),
                          MappingProxyType(stores), ledger, settings(raw.governance))


def _route(route: s.Route, path: str, stores: dict[str, StoreSpec], gov: c.Governance,
           report: Report) -> RoutePolicy | None:
    conf = route.plugins.ai_rate_limiting
    names, prices = _prices(route, path, report)
    if conf is None:  # no limits of its own; its prices still count for consumers' budgets
        worst = FREE
        for price in prices.values():
            worst = worst.most(price)
        return RoutePolicy(route.id, (), {}, MappingProxyType(prices), worst) if prices else None
    ppath = f"{path}.plugins.ai-rate-limiting"
    apisix = apisix_limits(conf, ppath, route.id, names, stores, gov, report)
    own = own_limits(conf, ppath, f"route:{route.id}", None, names, stores, gov, report)
    unpriced = [n for n in names if n not in prices]
    for j, limit in enumerate(own):
        if limit.unit is Unit.MONEY and unpriced:
            report(f"{ppath}.limits[{j}].money", "a money budget needs prices: instance(s) "
                   f"{', '.join(unpriced)} have no pricing")
    admit = tuple(x for x in apisix + own if x.scope is not Scope.INSTANCE)
    per_instance = {n: tuple(x for x in apisix + own if x.scope is Scope.INSTANCE
                             and x.instance in (None, n)) for n in names}
    worst = FREE
    for price in prices.values():
        worst = worst.most(price)
    return RoutePolicy(route.id, admit, MappingProxyType(per_instance),
                       MappingProxyType(prices), worst, conf.default_max_tokens,
                       conf.clamp_max_tokens, conf.clamp_min_tokens)


def _prices(route: s.Route, path: str, report: Report) -> tuple[list[str], dict[str, Price]]:
    multi, single = route.plugins.ai_proxy_multi, route.plugins.ai_proxy
    if multi is not None:
        items = [(f"{path}.plugins.ai-proxy-multi.instances[{j}]", inst.name, inst.pricing)
                 for j, inst in enumerate(multi.instances)]
    elif single is not None:
        items = [(f"{path}.plugins.ai-proxy", single.provider, single.pricing)]
    else:
        items = []
    prices: dict[str, Price] = {}
    for ipath, name, pricing in items:
        if pricing is None:
            continue
        price = Price.per_million(pricing.input, pricing.output, pricing.cached_input)
        for what in ("input", "output", "cached_input"):
            given = getattr(pricing, what)
            if given and not getattr(price, what):
                report(f"{ipath}.pricing.{what}", "finer than 0.001 per million tokens")
        prices[name] = price
    return [name for _, name, _ in items], prices


def _owned(conf: c.AIRateLimiting, path: str, owner: str, scope: Scope,
           stores: dict[str, StoreSpec], gov: c.Governance, report: Report
           ) -> tuple[Limit, ...]:
    """The limits on a consumer or a consumer group: theirs on every route."""
    if conf.instances or conf.rules:
        report(f"{path}.{'instances' if conf.instances else 'rules'}",
               "only valid on a route's ai-rate-limiting")
    return own_limits(conf, path, owner, scope, [], stores, gov, report)


def _ledger(gov: c.Governance, stores: dict[str, StoreSpec]) -> str | None:
    if gov.ledger == "none":
        return None
    if gov.ledger == "sqlite":
        return store_of("sqlite", None, stores, gov)
    r = gov.redis or c.LedgerRedis()
    target = RedisTarget(host=r.host, port=r.port, username=r.username, password=r.password,
                         database=r.database, timeout_s=r.timeout / 1000)
    return store_of("redis", target, stores, gov)


def settings(gov: c.Governance) -> PlanSettings:
    return PlanSettings(gov.reservation_lease, gov.sync_interval, gov.image_tokens,
                        gov.unbounded_input_wait, gov.store_error_log_interval,
                        gov.store_retry_after)
