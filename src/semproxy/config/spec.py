"""Frozen config specs: built once from a validated schema tree, then only read.

`build` runs every cross-field check (each error names its field path), resolves
providers through the registry and precomputes each instance's target, so the
request path never re-derives anything from raw config.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from semproxy.config import schema as s
from semproxy.config.cache import AICache, vector_model
from semproxy.config.cache import check as check_cache
from semproxy.config.cors import CorsSpec, build_cors
from semproxy.config.limits_plan import compile_plan
from semproxy.config.overlap import RouteUri, overlap_warnings
from semproxy.embeddings.factory import EmbeddingSpec
from semproxy.embeddings.registry import DEFAULT_LOCAL_MODEL, LOCAL_MODELS
from semproxy.errors import ConfigError, UpstreamError
from semproxy.governance.plan import GovernancePlan
from semproxy.governance.tiers import TierPolicy, blended
from semproxy.providers.base import Provider
from semproxy.providers.registry import LOCAL_EMBEDDINGS, PROVIDERS, embedding_provider_names
from semproxy.transport.target import NetPolicy, Target, TlsFiles

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


@dataclass(frozen=True, slots=True)
class SemanticSpec:
    threshold: float
    expose_scores: bool
    aggregation: str
    k: int
    min_margin: float
    embeddings: EmbeddingSpec
    catchall: str
    center: bool = False
    apisix_header: bool = False  # APISIX 3.18 debugging header name as well
    # balancer.threshold "auto": instances without a threshold learn theirs when the
    # references are built; `threshold` is then 0, the value an instance falls back to.
    auto_threshold: bool = False
    conversation: s.Conversation | None = None  # None: route on the last user turn only
    background_weight: float = 0.0  # balancer.background_weight (fast model only)
    budget: TierPolicy | None = None  # balancer.budget_routing (governance/tiers.py)


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
class ShadowSpec:
    """`balancer.shadow`: the route as the shadow table would route it, never served.

    `table` is the route with the shadow's examples, thresholds and semantic
    settings (so `open_router` builds its router like any other). `inline`: the
    decision is made before the response so `X-AI-Shadow-Route` can carry it
    (the route's `expose_scores` or `debug_headers` is on); otherwise it is made
    off the request path.
    """

    table: RouteSpec
    inline: bool


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


class _Errors:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.warnings: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")


def build(raw: s.Root, version: str, document: Mapping[str, Any] | None = None
          ) -> GatewayConfig:
    errs = _Errors()
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


def _consumers(raw: s.Root, errs: _Errors) -> dict[bytes, str]:
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


def _route(route: s.Route, path: str, errs: _Errors, written: Mapping[str, Any]
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
    semantic = _semantic(multi, ppath, net, errs)
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
    return replace(spec, shadow=_shadow(balancer.shadow, multi, spec, f"{ppath}.balancer.shadow",
                                        errs))


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
    multi: s.AIProxyMulti, ppath: str, net: NetPolicy, errs: _Errors,
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
        own = _own_net(net, inst.proxy, inst.tls)
        targets = provider.targets(inst.override.endpoint, inst.auth, model, own)
        _check_targets(targets.values(), ipath, errs)
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


def _aliases(inst: s.Instance, ipath: str, errs: _Errors) -> tuple[str, ...]:
    for k, alias in enumerate(inst.aliases):
        if alias == AUTO_MODEL:
            errs.add(f"{ipath}.aliases[{k}]", f"{AUTO_MODEL!r} means 'the gateway picks'; it "
                     "cannot name one instance")
    return tuple(dict.fromkeys(a for a in inst.aliases if a != AUTO_MODEL))


def _own_net(net: NetPolicy, proxy: str | None, tls: s.Tls | None) -> NetPolicy:
    """An instance's connection settings: the route's, with its own proxy and TLS files."""
    if proxy is None and tls is None:
        return net
    files = TlsFiles(ca_file=tls.ca_file, cert_file=tls.cert_file,
                     key_file=tls.key_file) if tls else None
    return replace(net, proxy=net.proxy if proxy is None else proxy, tls=files)


def _check_targets(targets: Iterable[Target], path: str, errs: _Errors) -> None:
    """Prepare every upstream request now: a bad endpoint or TLS file fails the load (one
    error per instance), and no request reads a TLS file on the event loop later."""
    for target in targets:
        if _check_target(target, path, errs) is not None:
            return


def _check_target(target: Target, path: str, errs: _Errors) -> str | None:
    """Prepare the upstream request now, so a bad endpoint or TLS file fails the load."""
    if target.url.startswith(("http://", "https://")):
        try:
            target.call  # noqa: B018 (a cached property: computed here, once)
        except UpstreamError as exc:
            errs.add(path, exc.message)
            return exc.message
    return None


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


def _semantic(
    multi: s.AIProxyMulti, ppath: str, net: NetPolicy, errs: _Errors
) -> SemanticSpec | None:
    balancer, opts = multi.balancer, multi.semantic_opts
    examples = [i for i in multi.instances if i.examples]
    if balancer.algorithm != "semantic":
        if opts is not None:
            errs.add(f"{ppath}.semantic_opts", "only valid with balancer.algorithm semantic")
        if balancer.budget_routing is not None:
            errs.add(f"{ppath}.balancer.budget_routing",
                     "only valid with balancer.algorithm semantic")
        if examples:
            errs.warnings.append(f"{ppath}: instances have examples but the balancer is "
                                 f"{balancer.algorithm}; the examples are ignored")
        return None
    embeddings = opts.embeddings if opts else multi.embeddings
    if opts is not None and multi.embeddings is not None:
        errs.add(f"{ppath}.embeddings", "give embeddings or semantic_opts.embeddings, not both")
    if embeddings is None:
        errs.add(f"{ppath}.embeddings", "required when balancer.algorithm is semantic")
        return None
    if not examples:
        errs.add(f"{ppath}.instances", "semantic routing needs at least one instance with examples")
    catchall = _catchall(multi, ppath, errs)
    emb = _embeddings(embeddings, f"{ppath}{'.semantic_opts' if opts else ''}.embeddings", errs)
    if emb is None or catchall is None:
        return None
    auto = opts is None and balancer.threshold == "auto"
    _warn_unset_threshold(multi, ppath, errs)
    return SemanticSpec(
        threshold=opts.threshold if opts else 0.0 if auto else float(balancer.threshold),
        auto_threshold=auto,
        expose_scores=(opts.debugging if opts else False) or balancer.expose_scores,
        aggregation=balancer.aggregation, k=balancer.k, min_margin=balancer.min_margin,
        embeddings=emb, catchall=catchall, apisix_header=opts is not None and opts.debugging,
        center=balancer.center, background_weight=balancer.background_weight,
        conversation=balancer.conversation if balancer.context == "conversation" else None,
        budget=_budget(multi, f"{ppath}.balancer.budget_routing", errs),
    )


def _budget(multi: s.AIProxyMulti, path: str, errs: _Errors) -> TierPolicy | None:
    """The route's tier policy; every instance needs prices to tell what is cheaper."""
    conf = multi.balancer.budget_routing
    if conf is None:
        return None
    if conf.keep_margin != sorted(conf.keep_margin):
        errs.add(f"{path}.keep_margin", "margins grow with the tier (more prompts move as "
                 "the budget fills)")
    unpriced = [i.name for i in multi.instances if i.pricing is None]
    if unpriced:
        errs.add(path, f"needs pricing on every instance to tell what is cheaper: "
                 f"{', '.join(unpriced)} have none")
    prices = {i.name: blended(i.pricing.input, i.pricing.output, conf.input_share)
              for i in multi.instances if i.pricing is not None}
    return TierPolicy(tuple(conf.keep_margin), MappingProxyType(prices))


def _warn_unset_threshold(multi: s.AIProxyMulti, ppath: str, errs: _Errors) -> None:
    """A semantic route whose instances have no threshold at all scores against 0.0:
    nearly every prompt clears it, so the catchall almost never serves."""
    opts = multi.semantic_opts
    where, given = ("semantic_opts.threshold", "threshold" in opts.model_fields_set) \
        if opts is not None else ("balancer.threshold", "threshold" in
                                  multi.balancer.model_fields_set)
    bare = [i.name for i in multi.instances if i.examples and i.threshold is None]
    if given or not bare:
        return
    errs.warnings.append(
        f"{ppath}.{where}: not set, so it is 0.0: nearly every prompt clears it on "
        f"{', '.join(bare)} and the catchall almost never serves; set a threshold "
        "(`semproxy calibrate` measures one on labelled prompts) or `threshold: auto`")


def _catchall(multi: s.AIProxyMulti, ppath: str, errs: _Errors) -> str | None:
    marked = [(j, i) for j, i in enumerate(multi.instances) if i.catchall]
    named = multi.semantic_opts.fallback if multi.semantic_opts else None
    for j, _ in marked[1:]:
        errs.add(f"{ppath}.instances[{j}].catchall", "only one instance can be the catchall")
    for j, inst in marked:
        if inst.examples:
            errs.add(f"{ppath}.instances[{j}].examples", "the catchall cannot have examples")
    if named is not None:
        if marked:
            errs.add(f"{ppath}.semantic_opts.fallback", "conflicts with instances[].catchall")
        if named not in {i.name for i in multi.instances}:
            errs.add(f"{ppath}.semantic_opts.fallback", f"no instance named {named!r}")
            return None
        return named
    if marked:
        return marked[0][1].name
    first = multi.instances[0].name
    errs.warnings.append(f"{ppath}.instances: no instance is the catchall, so the first one "
                         f"({first}) serves every prompt that clears no threshold; mark the "
                         "intended one with catchall: true")
    return first


def _embeddings(e: s.Embeddings, epath: str, errs: _Errors) -> EmbeddingSpec | None:
    if e.provider == LOCAL_EMBEDDINGS:
        return _local_embeddings(e, epath, errs)
    cls = PROVIDERS.get(e.provider)
    if cls is None or not cls.has_embeddings():
        what = "unknown embeddings provider" if cls is None else "provider has no embeddings API"
        errs.add(f"{epath}.provider",
                 f"{what} {e.provider!r} (use one of: {', '.join(embedding_provider_names())})")
        return None
    if cls.needs_endpoint() and not e.override.endpoint:
        errs.add(f"{epath}.override.endpoint", f"required for provider {e.provider}")
        return None
    net = _own_net(NetPolicy(timeout_s=e.timeout / 1000, ssl_verify=e.ssl_verify), e.proxy,
                   e.tls)
    target = cls(instance="embeddings").embeddings_target(e.override.endpoint, e.auth, e.model,
                                                          net)
    assert target is not None  # has_embeddings() above
    _check_target(target, epath, errs)
    return _embedding_spec(e, target)


def _local_embeddings(e: s.Embeddings, epath: str, errs: _Errors) -> EmbeddingSpec | None:
    """The in-process model `model` names (wordllama when absent), if it can run here."""
    name = e.model or DEFAULT_LOCAL_MODEL
    model = LOCAL_MODELS.get(name)
    if model is None:
        errs.add(f"{epath}.model",
                 f"unknown local model {name!r} (use one of: {', '.join(LOCAL_MODELS)})")
        return None
    why = model.missing()
    if why is not None:
        errs.add(f"{epath}.model", f"{name}: {why}")
        return None
    return _embedding_spec(e, None, name)


def _embedding_spec(e: s.Embeddings, target: Target | None, model: str | None = None
                    ) -> EmbeddingSpec:
    return EmbeddingSpec(
        provider=e.provider, model=model or e.model, target=target,
        cache_size=e.cache_size, breaker_failures=e.breaker_failures,
        breaker_cooldown_s=e.breaker_cooldown,
    )


def _shadow(sh: s.Shadow, multi: s.AIProxyMulti, route: RouteSpec, path: str, errs: _Errors
            ) -> ShadowSpec | None:
    """The shadow table of a route; every error names its field under `balancer.shadow`."""
    names = {i.name for i in route.instances}
    own = route.semantic
    if own is None and sh.examples is None:
        errs.add(f"{path}.examples", f"required on a {route.algorithm} route")
    examples = sh.examples if sh.examples is not None else {
        i.name: list(i.examples) for i in route.instances if i.examples}
    for name in [*examples, *sh.thresholds]:
        if name not in names:
            errs.add(f"{path}.{'examples' if name in examples else 'thresholds'}.{name}",
                     f"no instance named {name!r} on this route")
    for name in sh.thresholds:
        if name in names and name not in examples:
            errs.add(f"{path}.thresholds.{name}", "the instance has no shadow examples")
    catchall = sh.catchall or (own.catchall if own else next(
        (i.name for i in route.instances if i.name not in examples), route.instances[0].name))
    if catchall not in names:
        errs.add(f"{path}.catchall", f"no instance named {catchall!r} on this route")
    elif sh.catchall is not None and catchall in examples:
        errs.add(f"{path}.catchall", "the catchall cannot have shadow examples")
    emb = None
    if sh.embeddings is not None:
        emb = _embeddings(sh.embeddings, f"{path}.embeddings", errs)
    elif own is not None:
        emb = own.embeddings
    else:
        errs.add(f"{path}.embeddings", f"required on a {route.algorithm} route")
    if emb is None or errs.items:
        return None
    threshold = sh.threshold if sh.threshold is not None else own.threshold if own else 0.0
    base = own or SemanticSpec(threshold=threshold, expose_scores=False, aggregation="max", k=3,
                               min_margin=0.0, embeddings=emb, catchall=catchall)
    semantic = replace(base, threshold=threshold, embeddings=emb, catchall=catchall,
                       auto_threshold=base.auto_threshold and sh.threshold is None,
                       min_margin=base.min_margin if sh.min_margin is None else sh.min_margin)
    instances = tuple(replace(i, examples=tuple(examples.get(i.name, ())),
                              negative_examples=i.negative_examples if own else (),
                              threshold=_shadow_threshold(sh, i, own is not None),
                              catchall=i.name == catchall) for i in route.instances)
    table = replace(route, instances=instances, semantic=semantic, algorithm="semantic")
    return ShadowSpec(table=table, inline=multi.balancer.expose_scores or route.debug_headers)


def _shadow_threshold(sh: s.Shadow, inst: InstanceSpec, is_semantic: bool) -> float | None:
    """The shadow's own per-instance value, else (on a semantic route) the instance's,
    unless the shadow sets one threshold for all."""
    if inst.name in sh.thresholds:
        return sh.thresholds[inst.name]
    return inst.threshold if is_semantic and sh.threshold is None else None
