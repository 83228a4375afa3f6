"""What the cache will do with one request, decided before any store is touched.

`CacheSpec` is a route's `ai-cache` block compiled once per config version;
`plan` combines it with one request (after the routing decision: the serving
instance is known) into a `CachePlan`, or a `Bypass` saying why the cache stays
out of it. Pure: no I/O, so the lookup phase only reads and the account phase
only writes what the plan says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from semproxy.cache import control, keys, policy
from semproxy.cache.hitrule import HitRule, rule_for
from semproxy.config.cache import AICache

MAX_COMPARED_TEXT = 16 * 1024  # as the router: a pasted document is not compared in full


@dataclass(frozen=True, slots=True)
class CacheSpec:
    """A route's cache settings, compiled from its `ai-cache` block."""

    route: str
    conf: AICache
    model: str  # the embedding model whose vectors the semantic layer compares
    rule: HitRule  # when a candidate serves (cache/hitrule.py)
    # Scopes already written out, by consumer (routes without `include_vars`): the
    # consumers are the config's, so this stays as small as that list.
    scopes: dict[str | None, tuple[keys.Scope, str]] = field(
        default_factory=dict, compare=False, repr=False)
    # Read from `conf` once: every plan copies them.
    layered: bool = field(init=False, compare=False)
    exact_ttl: int = field(init=False, compare=False)
    semantic_ttl: int = field(init=False, compare=False)
    max_entries: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        conf, semantic = self.conf, self.conf.semantic
        object.__setattr__(self, "layered", conf.semantic_on)
        object.__setattr__(self, "exact_ttl", conf.exact.ttl)
        object.__setattr__(self, "semantic_ttl", semantic.ttl if semantic else conf.exact.ttl)
        object.__setattr__(self, "max_entries", semantic.max_entries if semantic else 0)

    @property
    def prefix(self) -> str:
        semantic = self.conf.semantic
        return semantic.vector_search.redis.index if semantic else "ai-cache"

    def scope(self, consumer: str | None, variables: Mapping[str, str] | None
              ) -> tuple[keys.Scope, str]:
        """The request's scope and the head of its exact key (`<prefix>:e:<scope>:`)."""
        if self.conf.cache_key.include_vars:
            made = _scope(self, consumer, variables or {})
            return made, f"{self.prefix}:e:{made.text()}:"
        found = self.scopes.get(consumer)
        if found is None:
            made = _scope(self, consumer, {})
            found = self.scopes[consumer] = (made, f"{self.prefix}:e:{made.text()}:")
        return found


def compile_spec(route: str, conf: AICache, model: str) -> CacheSpec:
    semantic = conf.semantic
    threshold = semantic.similarity_threshold if semantic else None
    return CacheSpec(route, conf, model,
                     rule_for(model, threshold, semantic.near_miss if semantic else True))


@dataclass(frozen=True, slots=True)
class Bypass:
    """The cache stays out of this request (`X-AI-Cache-Status: BYPASS`)."""

    reason: str


_UNSET: Any = object()


class CachePlan:
    """Keys and rules for one request. `partition` is None when only the exact layer
    applies; `text` is what the semantic layer compares (the lookup phase reuses the
    routing vector when `text` equals the routing text, else embeds `text`). Both are
    worked out when first read: an exact hit never needs them. Read-only by contract
    (a plain class with slots: built on every request of a cached route)."""

    __slots__ = ("_semantic", "control", "exact", "exact_ttl", "layered", "max_body",
                 "max_entries", "payload", "rule", "scope", "semantic_ttl", "spec",
                 "upstream")

    def __init__(self, exact: str, control: control.ClientControl, payload: Mapping[str, Any],
                 spec: CacheSpec, scope: keys.Scope, upstream: keys.Upstream) -> None:
        self.exact = exact
        self.control = control
        self.rule: HitRule = spec.rule
        self.exact_ttl: int = spec.exact_ttl
        self.semantic_ttl: int = spec.semantic_ttl
        self.max_entries: int = spec.max_entries
        self.max_body: int = spec.conf.max_cache_body_size
        self.payload = payload
        self.spec = spec
        self.scope = scope
        self.upstream = upstream
        # Nothing to work out on a route without the semantic layer (`partition` None).
        self.layered: bool = spec.layered
        self._semantic: tuple[str | None, str] = _UNSET if self.layered else (None, "")

    def _compared(self) -> tuple[str | None, str]:
        found = self._semantic
        if found is _UNSET:
            found = self._semantic = _semantic(self.spec, self.scope, self.payload,
                                               self.upstream)
        return found

    @property
    def partition(self) -> str | None:
        return self._compared()[0]

    @property
    def text(self) -> str:
        return self._compared()[1]

    @property
    def status(self) -> str | None:
        """BYPASS or REFRESH when the client's headers said so."""
        return self.control.status


def plan(spec: CacheSpec, payload: Mapping[str, Any], upstream: keys.Upstream,
         headers: Mapping[str, str], consumer: str | None = None,
         variables: Mapping[str, str] | None = None) -> CachePlan | Bypass:
    """The plan for a Chat Completions `payload` served by `upstream`."""
    conf = spec.conf
    ctl = control.client_control(headers, conf.bypass_on)
    if not ctl.read and not ctl.write:
        return Bypass("client")
    if conf.max_temperature is not None:
        refusal = policy.request_refusal(payload, conf.max_temperature)
        if refusal is not None:
            return Bypass(refusal)
    found = None if variables else spec.scopes.get(consumer)  # spec.scope, without a call
    scope, head = found or spec.scope(consumer, variables)
    return CachePlan(keys.exact_key_under(head, payload, upstream), ctl, payload, spec, scope,
                     upstream)


def _scope(spec: CacheSpec, consumer: str | None, variables: Mapping[str, str]) -> keys.Scope:
    ck = spec.conf.cache_key
    shared_consumers = ck.include_consumer is False
    return keys.Scope(
        route=None if ck.share_across_routes else spec.route,
        # An anonymous request has its own namespace ("-"), apart from every consumer's.
        consumer=None if shared_consumers else (consumer or "-"),
        variables=tuple((name, variables.get(name, "")) for name in ck.include_vars))


def _semantic(spec: CacheSpec, scope: keys.Scope, payload: Mapping[str, Any],
              upstream: keys.Upstream) -> tuple[str | None, str]:
    semantic = spec.conf.semantic
    messages = payload.get("messages")
    n = payload.get("n")
    if (semantic is None or not spec.conf.semantic_on or not isinstance(messages, list)
            or (isinstance(n, int) and n > 1)):
        return None, ""
    match = semantic.match
    window = keys.compared_window(messages, match.message_countback,
                                  match.ignore_system_prompts, match.ignore_assistant_prompts,
                                  match.ignore_tool_prompts)
    text = keys.compared_text(messages, window) if window else None
    if text is None:
        return None, ""
    partition = keys.partition_key(spec.prefix, scope, payload, upstream, window, spec.model)
    return partition, text[:MAX_COMPARED_TEXT]
