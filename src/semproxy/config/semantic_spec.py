"""The semantic side of a route's spec, built from its schema: the balancer's settings,
the catchall, budget-aware routing, the embeddings, and the shadow table."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from semproxy.config import schema as s
from semproxy.config.collect import Errors
from semproxy.config.targets import check_target, own_net
from semproxy.embeddings.factory import EmbeddingSpec
from semproxy.embeddings.registry import DEFAULT_LOCAL_MODEL, LOCAL_MODELS
from semproxy.governance.tiers import TierPolicy, blended
from semproxy.providers.registry import LOCAL_EMBEDDINGS, PROVIDERS, embedding_provider_names
from semproxy.transport.target import NetPolicy, Target

if TYPE_CHECKING:
    from semproxy.config.spec import InstanceSpec, RouteSpec


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


def semantic_spec(
    multi: s.AIProxyMulti, ppath: str, net: NetPolicy, errs: Errors
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
    emb = embedding_spec(embeddings, f"{ppath}{'.semantic_opts' if opts else ''}.embeddings", errs)
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


def _budget(multi: s.AIProxyMulti, path: str, errs: Errors) -> TierPolicy | None:
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


def _warn_unset_threshold(multi: s.AIProxyMulti, ppath: str, errs: Errors) -> None:
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


def _catchall(multi: s.AIProxyMulti, ppath: str, errs: Errors) -> str | None:
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


def embedding_spec(e: s.Embeddings, epath: str, errs: Errors) -> EmbeddingSpec | None:
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
    net = own_net(NetPolicy(timeout_s=e.timeout / 1000, ssl_verify=e.ssl_verify), e.proxy,
                   e.tls)
    target = cls(instance="embeddings").embeddings_target(e.override.endpoint, e.auth, e.model,
                                                          net)
    assert target is not None  # has_embeddings() above
    check_target(target, epath, errs)
    return _embedding_spec(e, target)


def _local_embeddings(e: s.Embeddings, epath: str, errs: Errors) -> EmbeddingSpec | None:
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


def shadow_spec(sh: s.Shadow, multi: s.AIProxyMulti, route: RouteSpec, path: str, errs: Errors
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
        emb = embedding_spec(sh.embeddings, f"{path}.embeddings", errs)
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
