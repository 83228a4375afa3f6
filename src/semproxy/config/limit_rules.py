"""From config fields to `Limit`s (governance/model.py): APISIX ai-rate-limiting and our own.

APISIX meanings kept here (apisix/plugins/ai-rate-limiting.lua, limit-count):
`limit`/`time_window` is one token counter for the whole route, checked for
every instance not listed in `instances[]`; an `instances[]` entry gives that
instance a counter of its own instead; both are checked when an instance is
about to be tried, and one over quota is skipped (the failover loop moves on).
`rules[]` are counters per value of `key` (a rule whose key resolves to nothing
does not apply) and are checked at admission. `limit_strategy` says which
tokens count. Counts are in tokens; windows are fixed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from semproxy.config import limits as c
from semproxy.governance.cost_expr import CostExpr, CostExprError, compile_cost
from semproxy.governance.model import Limit, Scope, Unit
from semproxy.governance.plan import StoreSpec
from semproxy.governance.pricing import from_money
from semproxy.governance.redis_store import RedisTarget
from semproxy.governance.windows import Window, parse_window

Report = Callable[[str, str], None]
STRATEGY = {"total_tokens": Unit.TOTAL_TOKENS, "prompt_tokens": Unit.INPUT_TOKENS,
            "completion_tokens": Unit.OUTPUT_TOKENS}
UNIT_FIELDS = ("requests", "input_tokens", "output_tokens", "total_tokens", "concurrent",
               "money")


def store_of(kind: str, target: RedisTarget | None, stores: dict[str, StoreSpec],
             gov: c.Governance) -> str:
    """The name of the store of this kind (one per distinct Redis target), registered."""
    if kind == "redis" and target is not None:
        name = "redis:" + hashlib.sha256(repr(target).encode()).hexdigest()[:12]
        stores.setdefault(name, StoreSpec("redis", redis=target))
        return name
    if kind == "sqlite" or (kind == "local" and gov.local_counters == "host"):
        stores.setdefault("sqlite", StoreSpec("sqlite", path=gov.sqlite_path))
        return "sqlite"
    stores.setdefault("memory", StoreSpec("memory"))
    return "memory"


def redis_target(conf: c.AIRateLimiting, path: str, report: Report) -> RedisTarget | None:
    """The Redis a `policy` names, or None for `local`; missing fields are reported."""
    if conf.policy == "local":
        return None
    common = dict(username=conf.redis_username, password=conf.redis_password,
                  database=conf.redis_database, pool=conf.redis_keepalive_pool)
    if conf.policy == "redis":
        if not conf.redis_host:
            report(f"{path}.redis_host", "required when policy is redis")
        return RedisTarget(host=conf.redis_host or "", port=conf.redis_port,
                           timeout_s=conf.redis_timeout / 1000, ssl=conf.redis_ssl,
                           ssl_verify=conf.redis_ssl_verify, **common)  # type: ignore[arg-type]
    if conf.policy == "redis-sentinel":
        for name in ("redis_sentinels", "redis_master_name"):
            if not getattr(conf, name):
                report(f"{path}.{name}", "required when policy is redis-sentinel")
        if conf.redis_role == "slave":
            report(f"{path}.redis_role", "slave: counters must be written to the master")
        nodes = tuple((n.host, n.port) for n in conf.redis_sentinels or ())
        return RedisTarget(sentinels=nodes, master_name=conf.redis_master_name,
                           timeout_s=conf.redis_read_timeout / 1000,
                           sentinel_username=conf.sentinel_username,
                           sentinel_password=conf.sentinel_password,
                           **common)  # type: ignore[arg-type]
    report(f"{path}.policy", "redis-cluster is not supported: a request's counters and the "
           "ledger span hash slots, and one Lua script must stay in one slot; use redis or "
           "redis-sentinel (docs/en/governance.md)")
    return None


def _count(value: int | str, path: str, report: Report) -> int | None:
    if isinstance(value, int):
        return value
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    report(path, "a variable here is not supported: a request could set its own limit "
           "(use a number, or rules[] keyed by consumer)")
    return None


def apisix_limits(conf: c.AIRateLimiting, path: str, route: str, names: list[str],
                  stores: dict[str, StoreSpec], gov: c.Governance, report: Report
                  ) -> tuple[Limit, ...]:
    has_pair, has_rules = conf.limit is not None or conf.time_window is not None, bool(conf.rules)
    if has_pair and (conf.limit is None or conf.time_window is None):
        report(f"{path}.{'time_window' if conf.limit is not None else 'limit'}",
               "limit and time_window go together")
        return ()
    if has_rules and (has_pair or conf.instances):
        report(f"{path}.rules", "rules cannot be combined with limit/time_window or instances")
        return ()
    if not (has_pair or has_rules or conf.instances or conf.limits):
        report(path, "give limit and time_window, instances, rules or limits")
    cost = _cost(conf, path, report)
    if conf.limit_strategy == "expression" and cost is None:
        return ()
    target = redis_target(conf, path, report)
    store = store_of("redis" if target else "local", target, stores, gov)
    unit = Unit.EXPRESSION if cost is not None else STRATEGY[conf.limit_strategy]
    base = dict(unit=unit, cost=cost, store=store,
                deny_on_store_error=_deny(None, conf), rejected_code=conf.rejected_code,
                rejected_msg=conf.rejected_msg, quota_headers=conf.show_limit_quota_header,
                apisix=True)
    out: list[Limit] = []
    listed = {q.name for q in conf.instances or ()}
    for j, quota in enumerate(conf.instances or ()):
        qpath = f"{path}.instances[{j}]"
        if quota.name not in names:
            report(f"{qpath}.name", f"no instance named {quota.name!r} on this route")
        amount = _count(quota.limit, f"{qpath}.limit", report)
        seconds = _count(quota.time_window, f"{qpath}.time_window", report)
        if amount and seconds:
            out.append(Limit(id=f"route:{route}/ai-rate-limiting/{quota.name}",
                             scope=Scope.INSTANCE, amount=amount, window=Window(seconds),
                             label=quota.name, instance=quota.name, **base))  # type: ignore[arg-type]
    if conf.limit is not None and conf.time_window is not None:
        amount = _count(conf.limit, f"{path}.limit", report)
        seconds = _count(conf.time_window, f"{path}.time_window", report)
        for name in names:
            if amount and seconds and name not in listed:
                out.append(Limit(id=f"route:{route}/ai-rate-limiting/#global",
                                 scope=Scope.INSTANCE, amount=amount, window=Window(seconds),
                                 label=name, instance=name, **base))  # type: ignore[arg-type]
    seen: set[str] = set()
    for j, rule in enumerate(conf.rules or ()):
        rpath = f"{path}.rules[{j}]"
        if rule.key in seen:
            report(f"{rpath}.key", f"duplicate key {rule.key!r} in rules")
        seen.add(rule.key)
        amount = _count(rule.count, f"{rpath}.count", report)
        seconds = _count(rule.time_window, f"{rpath}.time_window", report)
        if amount and seconds:
            out.append(Limit(id=f"route:{route}/ai-rate-limiting/rule:{rule.key}",
                             scope=Scope.KEY, amount=amount, window=Window(seconds),
                             label=rule.header_prefix or str(j + 1), key=rule.key,
                             **base))  # type: ignore[arg-type]
    return tuple(out)


def _cost(conf: c.AIRateLimiting, path: str, report: Report) -> CostExpr | None:
    """The compiled `cost_expr` of `limit_strategy: expression` (None otherwise)."""
    if conf.limit_strategy != "expression":
        if conf.cost_expr is not None:
            report(f"{path}.cost_expr", "only valid with limit_strategy expression")
        return None
    if conf.cost_expr is None:
        report(f"{path}.cost_expr", "required when limit_strategy is expression")
        return None
    try:
        return compile_cost(conf.cost_expr)
    except CostExprError as exc:
        report(f"{path}.cost_expr", str(exc))
        return None


def own_limits(conf: c.AIRateLimiting, path: str, owner: str, forced: Scope | None,
               names: list[str], stores: dict[str, StoreSpec], gov: c.Governance,
               report: Report) -> tuple[Limit, ...]:
    """semproxy's `limits[]`; on a consumer or group every limit is scoped to its owner."""
    target = redis_target(conf, path, report) if conf.policy != "local" else None
    code = conf.rejected_code if "rejected_code" in conf.model_fields_set else 429
    out = []
    for j, spec in enumerate(conf.limits):
        lpath = f"{path}.limits[{j}]"
        limit = _own(spec, lpath, owner, forced, names, report)
        if limit is None:
            continue
        kind = "redis" if target else "sqlite" if limit.unit is Unit.MONEY else "local"
        out.append(Limit(
            id=limit.id, scope=limit.scope, unit=limit.unit, amount=limit.amount,
            window=limit.window, label=limit.label, instance=limit.instance,
            tiers=limit.tiers, store=store_of(kind, target, stores, gov),
            deny_on_store_error=_deny(spec.on_store_error, conf), rejected_code=code,
            rejected_msg=conf.rejected_msg))
    return tuple(out)


def _own(spec: c.LimitSpec, path: str, owner: str, forced: Scope | None, names: list[str],
         report: Report) -> Limit | None:
    given = [f for f in UNIT_FIELDS if getattr(spec, f) is not None]
    if len(given) != 1:
        report(path, f"give exactly one of {', '.join(UNIT_FIELDS)}")
        return None
    unit = Unit(given[0])
    value = getattr(spec, given[0])
    scope = forced or Scope(spec.scope)
    if forced is not None and spec.scope not in ("route", forced.value):
        report(f"{path}.scope", f"limits on a {forced.value.replace('_', ' ')} count for it")
    window = _window(spec, unit, path, report)
    if window is None:
        return None
    if spec.tiers and (unit is not Unit.MONEY or spec.tiers != sorted(set(spec.tiers))):
        report(f"{path}.tiers", "tiers are increasing fractions of a money budget")
    if spec.instance is not None and (scope is not Scope.INSTANCE or spec.instance not in names):
        report(f"{path}.instance", "needs scope instance and an instance of this route")
    amount = from_money(value) if unit is Unit.MONEY else int(value)
    name = spec.name or f"{scope.value}.{unit.value}.{window.describe().replace(' ', '')}"
    return Limit(id=f"{owner}/{name}", scope=scope, unit=unit, amount=amount, window=window,
                 store="", label=name, instance=spec.instance, tiers=tuple(spec.tiers))


def _window(spec: c.LimitSpec, unit: Unit, path: str, report: Report) -> Window | None:
    if unit is Unit.CONCURRENT:
        if spec.window is not None or spec.rolling:
            report(f"{path}.window", "concurrent counts requests in flight: no window")
        return Window(0)
    if spec.window is None:
        report(f"{path}.window", f"required for {unit.value}")
        return None
    if spec.buckets is not None and not spec.rolling:
        report(f"{path}.buckets", "only with rolling: true")
    try:
        return parse_window(spec.window, spec.rolling, spec.buckets)
    except ValueError as exc:
        report(f"{path}.window", str(exc))
        return None


def _deny(own: str | None, conf: c.AIRateLimiting) -> bool:
    """`on_store_error` of the limit, else of the plugin, else APISIX's allow_degradation."""
    policy = own or conf.on_store_error
    return policy == "deny" if policy else not conf.allow_degradation
