"""The metrics observer as it was before tallies (the oracle of test_exposition.py).

Kept verbatim from src/semproxy/observability/metrics.py before the change, less
`render`: what the same moments gave as an exposition when every one of them
updated the Prometheus objects at once. The budget-routing counter, the cache's
metrics and the folded governance counters came with other work at the same time;
they are here as that work wrote them (direct updates), so the families match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from semproxy.observability.cache_metrics import CacheMetrics
from semproxy.observability.metrics import BREAKER_STATES, FAST_BUCKETS, LATENCY_BUCKETS
from semproxy.observability.observer import DecisionView, FoldedCount, RequestObserver
from semproxy.observability.tokens import COMPLETION, PROMPT, TOTAL
from semproxy.types import Usage


class DirectMetrics(RequestObserver):
    """semproxy's metrics as they were kept before tallies: every moment updates the
    Prometheus objects at once (`inc`, `observe`). The oracle of the exposition tests."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("semproxy_requests_total",
                                "Requests by route, instance, status and client protocol",
                                ["route", "instance", "status", "protocol"], registry=r)
        self.latency = Histogram("semproxy_request_duration_seconds",
                                 "Time from request to last byte", ["route"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.upstream = Histogram("semproxy_upstream_duration_seconds",
                                  "Time to upstream response headers", ["route", "instance"],
                                  buckets=LATENCY_BUCKETS, registry=r)
        self.ttft = Histogram("semproxy_time_to_first_token_seconds",
                              "Streams: time to the first relayed chunk", ["route", "instance"],
                              buckets=LATENCY_BUCKETS, registry=r)
        self.tokens = Counter("semproxy_tokens_total", "Tokens reported by upstream usage",
                              ["route", "instance", "kind"], registry=r)
        self.attempts = Counter("semproxy_upstream_attempts_total",
                                "Upstream attempts by outcome", ["route", "instance", "outcome"],
                                registry=r)
        self.failovers = Counter("semproxy_failovers_total", "Moves to the next candidate",
                                 ["route", "source", "target", "cause"], registry=r)
        self.semantic = Counter("semproxy_semantic_decisions_total",
                                "Semantic routing decisions", ["route", "instance", "reason"],
                                registry=r)
        self.embedding = Histogram("semproxy_embedding_duration_seconds",
                                   "Time to embed and score a prompt", ["route"],
                                   buckets=FAST_BUCKETS, registry=r)
        self.cache = Counter("semproxy_embedding_cache_total", "Prompt-embedding cache lookups",
                             ["result"], registry=r)
        self.decision_cache = Counter("semproxy_semantic_decision_cache_total",
                                      "Semantic decisions answered by the decision cache",
                                      ["route", "result"], registry=r)
        self.breaker = Gauge("semproxy_embedding_breaker_state",
                             "Embedding circuit breaker: 0 closed, 1 half-open, 2 open",
                             ["embeddings"], registry=r, multiprocess_mode="max")
        self.healthy = Gauge("semproxy_instance_healthy", "1 healthy, 0 unhealthy",
                             ["route", "instance"], registry=r, multiprocess_mode="min")
        self.config_version = Gauge("semproxy_config_info",
                                    "1 for the active config version, 0 for earlier ones",
                                    ["version"], registry=r, multiprocess_mode="max")
        self.reload_failures = Counter("semproxy_config_reload_failures_total",
                                       "Config versions rejected as invalid", registry=r)
        self.source_up = Gauge("semproxy_config_source_up",
                               "1 when the config source (file, etcd) answered the last read",
                               registry=r, multiprocess_mode="min")
        self.source_up.set(1)
        self.tasks = Gauge("semproxy_event_loop_tasks",
                           "asyncio tasks alive at scrape time (a leak shows as growth)",
                           registry=r, multiprocess_mode="livesum")
        self.strong_shed = Counter("semproxy_semantic_strong_shed_total",
                                   "model: accurate: ambiguous prompts decided by the fast "
                                   "model because the strong model's queue was full",
                                   registry=r)
        self.shadow_picks = Counter("semproxy_shadow_picks_total",
                                    "Shadow table decisions by the instance it would serve",
                                    ["route", "instance"], registry=r)
        self.shadow_agreement = Counter("semproxy_shadow_agreement_total",
                                        "Shadow decisions that agree with the serving pick",
                                        ["route", "agree"], registry=r)
        self.shadow_errors = Counter("semproxy_shadow_errors_total",
                                     "Shadow decisions that could not score the prompt",
                                     ["route", "reason"], registry=r)
        self.shadow_dropped = Counter("semproxy_shadow_dropped_total",
                                      "Shadow decisions skipped because the queue was full",
                                      ["route"], registry=r)
        self.budget = Counter("semproxy_budget_routing_total",
                              "Semantic decisions read again by budget-aware routing: the "
                              "pick kept (served = pick) or moved to a cheaper instance",
                              ["route", "tier", "pick", "served"], registry=r)
        self._folded: dict[str, Counter] = {}
        self._seen: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self.cache_metrics = CacheMetrics(r, self._child)
        self._shed_seen = 0
        self._version: str | None = None
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    # -- RequestObserver ---------------------------------------------------
    def _child(self, metric: Any, *labels: str) -> Any:
        """The labelled series, looked up once: `labels()` costs microseconds per call
        (validation, a lock, a dict), which adds up at several series per request."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        self._child(self.attempts, route, instance, outcome).inc()
        self._child(self.upstream, route, instance).observe(seconds)

    def on_failover(self, route: str, source: str, target: str, cause: str) -> None:
        self.failovers.labels(route, source, target, cause).inc()

    def on_semantic(self, route: str, decision: DecisionView, prompt: str | None = None
                    ) -> None:
        self._child(self.semantic, route, decision.pick, decision.reason).inc()

    def on_shadow(self, route: str, serving: str, decision: DecisionView) -> None:
        if not decision.ranking:  # not scored (embedding failed): no pick to compare
            self._child(self.shadow_errors, route, decision.reason).inc()
            return
        self._child(self.shadow_picks, route, decision.pick).inc()
        agree = "true" if decision.pick == serving else "false"
        self._child(self.shadow_agreement, route, agree).inc()

    def on_shadow_dropped(self, route: str) -> None:
        self._child(self.shadow_dropped, route).inc()

    # -- the rest of the gateway -------------------------------------------
    def on_budget(self, route: str, tier: int, pick: str, served: str) -> None:
        self._child(self.budget, route, str(tier), pick, served).inc()

    def on_cache(self, route: str, status: str, layer: str | None) -> None:
        self.cache_metrics.on_cache(route, status, layer)

    def on_cache_store(self, route: str, outcome: str) -> None:
        self.cache_metrics.on_cache_store(route, outcome)

    def on_cache_saved(self, route: str, usage: Usage, money: float) -> None:
        self.cache_metrics.on_cache_saved(route, usage, money)

    def on_cache_shadow(self, route: str, layer: str, similarity: float | None,
                        wrong: bool) -> None:
        self.cache_metrics.on_cache_shadow(route, layer, similarity, wrong)

    def on_counts(self, rows: Iterable[FoldedCount]) -> None:
        for row in rows:
            key = (row.name, row.labels)
            seen = self._seen.get(key)
            if seen is not None and row.value <= seen:
                continue
            self._seen[key] = row.value
            metric = self._folded.get(row.name)
            if metric is None:
                metric = self._folded[row.name] = Counter(
                    row.name.removesuffix("_total"), row.help,
                    [name for name, _ in row.labels], registry=self.registry)
            child = self._child(metric, *(value for _, value in row.labels))
            if row.value > (seen or 0):
                child.inc(row.value - (seen or 0))

    def on_embedding(self, route: str, seconds: float | None, decision_cached: bool | None
                     ) -> None:
        if seconds is not None:  # a decision-cache hit embedded nothing: not a duration
            self._child(self.embedding, route).observe(seconds)
        if decision_cached is not None:
            self._child(self.decision_cache, route, "hit" if decision_cached else "miss").inc()

    def on_embedding_cache(self, hit: bool) -> None:
        self._child(self.cache, "hit" if hit else "miss").inc()

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Usage | None, protocol: str = "chat") -> None:
        self._child(self.requests, route, instance, str(status), protocol).inc()
        self._child(self.latency, route).observe(seconds)
        if ttft is not None:
            self._child(self.ttft, route, instance).observe(ttft)
        if usage is not None:  # the kinds of observability/tokens.py
            given, made = usage.input, usage.output
            if given:
                self._child(self.tokens, route, instance, PROMPT).inc(given)
            if made:
                self._child(self.tokens, route, instance, COMPLETION).inc(made)
            if given + made:
                self._child(self.tokens, route, instance, TOTAL).inc(given + made)

    def on_health(self, route: str, instance: str, healthy: bool) -> None:
        self.healthy.labels(route, instance).set(1 if healthy else 0)

    def on_breakers(self, states: Iterable[tuple[str, str]]) -> None:
        for name, state in states:
            self.breaker.labels(name).set(BREAKER_STATES.get(state, 0))

    def on_health_snapshot(self, route: str, states: Mapping[str, str]) -> None:
        for instance, state in states.items():
            self.healthy.labels(route, instance).set(0 if state == "unhealthy" else 1)

    def on_config(self, version: str) -> None:
        # Set the old version to 0 rather than removing it: with --workers a removed
        # series would live on in the other workers' files with its old value.
        if self._version not in (None, version):
            self.config_version.labels(self._version).set(0)
        self._version = version
        self.config_version.labels(version).set(1)

    def on_strong_shed(self, total: int) -> None:
        """`total`: the process's shed count so far (it only grows)."""
        if total > self._shed_seen:
            self.strong_shed.inc(total - self._shed_seen)
            self._shed_seen = total

    def on_tasks(self, count: int) -> None:
        self.tasks.set(count)

    def on_reload_failed(self) -> None:
        self.reload_failures.inc()

    def on_source(self, is_up: bool) -> None:
        self.source_up.set(1 if is_up else 0)
