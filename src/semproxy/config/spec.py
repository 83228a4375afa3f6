"""Frozen config specs: built once from a validated schema tree, then only read.

`build` runs every cross-field check (each error names its field path), resolves
providers through the registry and precomputes each instance's target, so the
request path never re-derives anything from raw config.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from semproxy.config import schema as s
from semproxy.config.cache import AICache, vector_model
from semproxy.config.cache import check as check_cache
from semproxy.config.collect import Errors
from semproxy.config.cors import CorsSpec, build_cors
from semproxy.config.limits_plan import compile_plan
from semproxy.config.overlap import RouteUri, overlap_warnings
from semproxy.config.semantic_spec import SemanticSpec, ShadowSpec, semantic_spec, shadow_spec
from semproxy.config.targets import check_targets, own_net
from semproxy.embeddings.registry import DEFAULT_LOCAL_MODEL
from semproxy.errors import ConfigError
from semproxy.governance.plan import GovernancePlan
from semproxy.providers.base import Provider
from semproxy.providers.registry import PROVIDERS
from semproxy.transport.target import NetPolicy, Target

TRANSIENT_5XX = frozenset(range(500, 600))
AUTO_MODEL = "auto"  # the model name that leaves the choice to the gateway


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceSpec:
    name: str
    provider: Provider
    # Protocol name -> where the instance speaks it natively; the first is its own.
    targets: Mapping[str, Target]
    options: Mapping[str, Any]
    weight: int
    priority: int
    examples: tuple[str, ...] = ()
    negative_examples: tuple[str, ...] = ()
    threshold: float | None = None
    catchall: bool = False
    checks: s.Checks | None = None
    aliases: tuple[str, ...] = ()
    # `options.model` when the file names it; None when it comes from the environment
    # (`${VAR}`): such a value is never shown to clients, nor matched for them.
    listed_model: str | None = None

    @property
    def target(self) -> Target:
        """Where the instance speaks its provider's own protocol."""
        return next(iter(self.targets.values()))

    @property
    def embeddings_target(self) -> Target | None:
        """Where the instance answers clients' embeddings requests; None: it cannot."""
        return self.targets.get("embeddings")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Which failures move a request to the next candidate (the failover loop reads it)."""

    statuses: frozenset[int]
    max_retries: int | None
    within_ms: int | None
    # The route has a failover policy, so a request the upstream may have received
    # (the connection broke or timed out after sending) may go to another instance.
    resend: bool = False

    def is_retryable(self, status: int) -> bool:
        return status in self.statuses


@dataclass(frozen=True, slots=True)
class RouteSpec:
    id: str
    uri: str
    is_prefix: bool
    methods: frozenset[str]
    instances: tuple[InstanceSpec, ...]
    algorithm: str
    hash_on: str
    key: str | None
    semantic: SemanticSpec | None
    retry: RetryPolicy
    max_body: int
    debug_headers: bool
    logging: s.Logging
    key_auth: s.KeyAuth | None = None
    shadow: ShadowSpec | None = None
    strict_models: bool = False
    cors: CorsSpec | None = None  # the `cors` plugin: off unless the route has it
    cache: AICache | None = None  # the route's `ai-cache` plugin
    # The model whose vectors the cache's semantic layer compares (config/cache.py).
    cache_model: str = DEFAULT_LOCAL_MODEL

    def instance(self, name: str) -> InstanceSpec:
        return next(i for i in self.instances if i.name == name)


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    listen: str
    admin: s.Admin | None
    routes: tuple[RouteSpec, ...]
    version: str
    shutdown_grace_s: float
    raw: s.Root
    client_body_timeout_s: float = 30.0
    client_keepalive_timeout_s: float = 75.0
    warnings: tuple[str, ...] = field(default=())
    # The document as written (before ${VAR} substitution): what the admin API
    # edits and what is pushed to etcd, so secrets stay in each replica's env.
    document: Mapping[str, Any] = field(default_factory=dict)
    # sha256(key) -> consumer name; keys themselves are not kept after load.
    consumers: Mapping[bytes, str] = field(default_factory=dict)
    # Identity of the version with its secrets (what decides whether a reload is
    # new); `version` is the hash of the masked document, the one that is shown.
    fingerprint: str = ""
    # Limits, budgets, prices and their stores (governance/plan.py).
    governance: GovernancePlan | None = None


def build(raw: s.Root, version: str, document: Mapping[str, Any] | None = None
          ) -> GatewayConfig:
    errs = Errors()
    routes = []
    seen: set[str] = set()
    for i, route in enumerate(raw.routes):
        path = f"routes[{i}]"
        if route.id in seen:
            errs.add(f"{path}.id", f"duplicate route id {route.id!r}")
        seen.add(route.id)
        spec = _route(route, path, errs, _written_route(document, i))
        if spec is not None and route.status == 1:  # status 0: checked, but not served
            routes.append(spec)
    errs.warnings += overlap_warnings([RouteUri(i, r.id, r.uri) for i, r in enumerate(raw.routes)
                                       if r.status == 1])
    consumers = _consumers(raw, errs)
    governance = compile_plan(raw, errs.add)
    if raw.admin is not None and (refusal := admin_refusal(raw.admin)) is not None:
        errs.add("admin.key", refusal)
    if errs.items:
        raise ConfigError(errs.items)
    # Warnings travel with the config: the gateway's sources log them, the
    # commands print them (each exactly once).
    return GatewayConfig(
        listen=raw.listen, admin=raw.admin, routes=tuple(routes), version=version,
        shutdown_grace_s=raw.shutdown_grace, raw=raw, warnings=tuple(errs.warnings),
        client_body_timeout_s=raw.client_body_timeout,
        client_keepalive_timeout_s=raw.client_keepalive_timeout,
        document=MappingProxyType(dict(document or {})),
        consumers=MappingProxyType(consumers), governance=governance,
    )


def is_loopback(listen: str) -> bool:
    host = listen.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def admin_refusal(admin: s.Admin) -> str | None:
    """Why this admin listener must not run, or None when it may.

    Without a key the admin API can rewrite every route, so keyless is allowed
    only on a loopback address and only when asked for explicitly.
    """
    if admin.key or (admin.allow_no_key_on_loopback and is_loopback(admin.listen)):
        return None
    return (f"required for the admin API on {admin.listen} (keyless is allowed only on "
            "loopback with allow_no_key_on_loopback: true)")


def _consumers(raw: s.Root, errs: Errors) -> dict[bytes, str]:
    out: dict[bytes, str] = {}
    names: set[str] = set()
    for i, consumer in enumerate(raw.consumers):
        if consumer.username in names:
            errs.add(f"consumers[{i}].username", f"duplicate consumer {consumer.username!r}")
        names.add(consumer.username)
        digest = hashlib.sha256(consumer.plugins.key_auth.key.encode()).digest()
        if digest in out:
            errs.add(f"consumers[{i}].plugins.key-auth.key", "the same key is used twice")
        out[digest] = consumer.username
    return out


def _written_route(document: Mapping[str, Any] | None, i: int) -> Mapping[str, Any]:
    """Route `i` as the file wrote it (before `${VAR}` substitution), {} if unknown."""
    routes = (document or {}).get("routes")
    route = routes[i] if isinstance(routes, list) and i < len(routes) else None
    plugins = route.get("plugins") if isinstance(route, dict) else None
    return plugins if isinstance(plugins, dict) else {}


def _route(route: s.Route, path: str, errs: Errors, written: Mapping[str, Any]
           ) -> RouteSpec | None:
    multi, single = route.plugins.ai_proxy_multi, route.plugins.ai_proxy
    if (multi is None) == (single is None):
        errs.add(f"{path}.plugins", "exactly one of ai-proxy-multi or ai-proxy is required")
        return None
    if single is not None:
        multi = _from_single(single)
        ppath = f"{path}.plugins.ai-proxy"
    else:
        ppath = f"{path}.plugins.ai-proxy-multi"
    assert multi is not None
    net = NetPolicy(
        timeout_s=multi.timeout / 1000, ssl_verify=multi.ssl_verify, keepalive=multi.keepalive,
        keepalive_timeout_s=multi.keepalive_timeout / 1000, keepalive_pool=multi.keepalive_pool,
        attempt_timeout_s=multi.attempt_timeout / 1000 if multi.attempt_timeout else None,
        max_body=multi.max_resp_body_size, max_event=multi.max_sse_event_size,
        max_connections=multi.max_connections_per_origin, proxy=multi.proxy)
    instances = _instances(multi, ppath, net, errs, _written_instances(written),
                           is_single=single is not None)
    semantic = semantic_spec(multi, ppath, net, errs)
    balancer = multi.balancer
    if balancer.algorithm == "chash" and balancer.hash_on != "consumer" and not balancer.key:
        errs.add(f"{ppath}.balancer.key", f"required when hash_on is {balancer.hash_on}")
    uri = route.uri
    spec = RouteSpec(
        id=route.id, uri=uri.rstrip("*"), is_prefix=uri.endswith("*"),
        methods=frozenset(route.methods), instances=instances,
        algorithm=balancer.algorithm, hash_on=balancer.hash_on, key=balancer.key,
        semantic=semantic, retry=_retry(multi), max_body=multi.max_req_body_size,
        debug_headers=multi.debug_headers, logging=multi.logging,
        key_auth=route.plugins.key_auth, strict_models=multi.strict_models,
        cors=None if route.plugins.cors is None else build_cors(
            route.plugins.cors, f"{path}.plugins.cors", errs.add),
        cache=route.plugins.ai_cache,
        cache_model=vector_model(semantic.embeddings if semantic else None),
    )
    if route.plugins.ai_cache is not None:
        check_cache(route.plugins.ai_cache, f"{path}.plugins.ai-cache", errs.warnings.append)
    if balancer.shadow is None:
        return spec
    shadow = shadow_spec(balancer.shadow, multi, spec, f"{ppath}.balancer.shadow", errs)
    return replace(spec, shadow=shadow)


def _from_single(single: s.AIProxy) -> s.AIProxyMulti:
    instance = s.Instance(
        name=single.provider, provider=single.provider, weight=1, auth=single.auth,
        options=single.options, override=single.override, pricing=single.pricing,
    )
    fields = single.model_dump(exclude={"provider", "auth", "options", "override", "pricing"})
    return s.AIProxyMulti.model_validate({**fields, "instances": [instance]}, strict=False)


def _written_instances(plugins: Mapping[str, Any]) -> list[Any]:
    """The instances as written: `ai-proxy-multi`'s list, or `ai-proxy` as its one."""
    multi = plugins.get("ai-proxy-multi")
    if isinstance(multi, dict) and isinstance(multi.get("instances"), list):
        return list(multi["instances"])
    single = plugins.get("ai-proxy")
    return [single] if isinstance(single, dict) else []


def _listed_model(model: str | None, written: Any) -> str | None:
    """`model`, unless the file wrote a reference there (anything with `$`): a value from
    the environment is the operator's, not the clients'."""
    options = written.get("options") if isinstance(written, dict) else None
    raw = options.get("model") if isinstance(options, dict) else model
    return model if model is not None and not (isinstance(raw, str) and "$" in raw) else None


def _instances(
    multi: s.AIProxyMulti, ppath: str, net: NetPolicy, errs: Errors,
    written: list[Any] | None = None, is_single: bool = False
) -> tuple[InstanceSpec, ...]:
    out = []
    names: set[str] = set()
    for j, inst in enumerate(multi.instances):
        # `ai-proxy` keeps its one instance's fields at the plugin level: report them there.
        ipath = ppath if is_single else f"{ppath}.instances[{j}]"
        if inst.name in names:
            errs.add(f"{ipath}.name", f"duplicate instance name {inst.name!r}")
        names.add(inst.name)
        cls = PROVIDERS.get(inst.provider)
        if cls is None:
            errs.add(f"{ipath}.provider", f"unknown provider {inst.provider!r} "
                     f"(known: {', '.join(sorted(PROVIDERS))})")
            continue
        if cls.needs_endpoint() and not inst.override.endpoint:
            errs.add(f"{ipath}.override.endpoint", f"required for provider {inst.provider}")
            continue
        provider = cls(instance=inst.name)
        model = inst.options.get("model")
        model = model if isinstance(model, str) else None
        own = own_net(net, inst.proxy, inst.tls)
        targets = provider.targets(inst.override.endpoint, inst.auth, model, own)
        check_targets(targets.values(), ipath, errs)
        out.append(InstanceSpec(
            name=inst.name, provider=provider, targets=MappingProxyType(targets),
            options=MappingProxyType(dict(inst.options)), weight=inst.weight,
            priority=inst.priority, examples=tuple(inst.examples or ()),
            negative_examples=tuple(inst.negative_examples or ()),
            threshold=inst.threshold, catchall=inst.catchall, checks=inst.checks,
            aliases=_aliases(inst, ipath, errs),
            listed_model=_listed_model(model, (written or [])[j] if j < len(written or [])
                                       else None),
        ))
    return tuple(out)


def _aliases(inst: s.Instance, ipath: str, errs: Errors) -> tuple[str, ...]:
    for k, alias in enumerate(inst.aliases):
        if alias == AUTO_MODEL:
            errs.add(f"{ipath}.aliases[{k}]", f"{AUTO_MODEL!r} means 'the gateway picks'; it "
                     "cannot name one instance")
    return tuple(dict.fromkeys(a for a in inst.aliases if a != AUTO_MODEL))


def _retry(multi: s.AIProxyMulti) -> RetryPolicy:
    """Statuses that fail over, with APISIX's meaning of `fallback_strategy`.

    `http_429` adds 429 and `http_5xx` adds 500-599; `fallback_http_statuses` adds
    its own. `instance_health_and_rate_limiting` (`rate_limiting` in a list) adds
    no status: it means "skip unhealthy instances", which semproxy always does.
    A request that never left (refused, no connection in time) fails over whatever
    the policy; one the upstream may have received (reset or timed out after
    sending) only when the route has a failover policy (`resend`): otherwise the
    same LLM call could be made, and billed, twice.
    """
    strategy = multi.fallback_strategy or ()
    kinds = {strategy} if isinstance(strategy, str) else set(strategy)
    statuses: set[int] = set(multi.fallback_http_statuses)
    if "http_429" in kinds:
        statuses.add(429)
    if "http_5xx" in kinds:
        statuses |= TRANSIENT_5XX
    resend = (multi.fallback_strategy is not None or bool(multi.fallback_http_statuses)
              or multi.max_retries is not None)
    return RetryPolicy(statuses=frozenset(statuses), max_retries=multi.max_retries,
                       within_ms=multi.retry_on_failure_within_ms, resend=resend)


