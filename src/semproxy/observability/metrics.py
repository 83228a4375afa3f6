"""Prometheus metrics: a `RequestObserver` that records what the request path reports.

With `--workers N` the workers share one multiprocess directory (set up by the
parent before forking) and a scrape on any worker's admin listener aggregates
all of them; with one worker an ordinary registry is used.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client import multiprocess as mp

from semproxy.observability.cache_metrics import CacheMetrics
from semproxy.observability.observer import DecisionView, FoldedCount, RequestObserver
from semproxy.observability.tally import CounterTally, Folding, HistogramTally, check_folding
from semproxy.observability.tokens import COMPLETION, PROMPT, TOTAL
from semproxy.types import Usage

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
FAST_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 3)
BREAKER_STATES = {"closed": 0, "half_open": 1, "open": 2}
# With --workers: how often a worker folds its tallies into its files, and how long a
# scrape waits for every worker to have folded the requests that ended before it.
FOLD_INTERVAL_S = 0.1
SCRAPE_WAIT_S = 0.25
# The `status` label of the common statuses, formatted once.
_STATUS = {code: str(code) for code in range(100, 600)}


def multiprocess_enabled() -> bool:
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def use_multiprocess_dir(path: str | Path) -> None:
    """Make metrics created from now on (in this process and its forks) live in `path`.

    prometheus_client picks its value store once, when it is first imported, from
    PROMETHEUS_MULTIPROC_DIR; the CLI has imported it long before it knows how many
    workers it will fork, so the choice is made again here.
    """
    if not multiprocess_enabled():  # while this process keeps its metrics in memory
        check_folding()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)
    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


class Metrics(RequestObserver):
    """All gateway metrics; one instance per worker, owned by the gateway.

    The series the request path counts are tallies (`observability/tally.py`):
    plain numbers folded into the registry whenever it is collected. With
    `--workers N` each worker folds its tallies into its multiprocess files
    every `FOLD_INTERVAL_S` (`fold_every`), and a scrape waits one interval so
    that it counts every request that ended before it began.
    """

    def __init__(self) -> None:
        # A multiprocess parent checked before forking (the probe's series would land
        # in the shared files); a directory set before start relies on the version cap.
        if not multiprocess_enabled():
            check_folding()
        self.registry = CollectorRegistry(auto_describe=True)
        self.folding = Folding()
        self.registry.register(self.folding)  # first: it folds before the metrics collect
        r = self.registry
        self.requests = self.counter("semproxy_requests_total",
                                     "Requests by route, instance, status and client protocol",
                                     ["route", "instance", "status", "protocol"])
        self.latency = self.histogram("semproxy_request_duration_seconds",
                                      "Time from request to last byte", ["route"],
                                      LATENCY_BUCKETS)
        self.upstream = self.histogram("semproxy_upstream_duration_seconds",
                                       "Time to upstream response headers",
                                       ["route", "instance"], LATENCY_BUCKETS)
        self.ttft = self.histogram("semproxy_time_to_first_token_seconds",
                                   "Streams: time to the first relayed chunk",
                                   ["route", "instance"], LATENCY_BUCKETS)
        self.tokens = self.counter("semproxy_tokens_total", "Tokens reported by upstream usage",
                                   ["route", "instance", "kind"])
        self.attempts = self.counter("semproxy_upstream_attempts_total",
                                     "Upstream attempts by outcome",
                                     ["route", "instance", "outcome"])
        self.failovers = self.counter("semproxy_failovers_total", "Moves to the next candidate",
                                      ["route", "source", "target", "cause"])
        self.semantic = self.counter("semproxy_semantic_decisions_total",
                                     "Semantic routing decisions",
                                     ["route", "instance", "reason"])
        self.embedding = self.histogram("semproxy_embedding_duration_seconds",
                                        "Time to embed and score a prompt", ["route"],
                                        FAST_BUCKETS)
        self.cache = self.counter("semproxy_embedding_cache_total",
                                  "Prompt-embedding cache lookups", ["result"])
        self.decision_cache = self.counter("semproxy_semantic_decision_cache_total",
                                           "Semantic decisions answered by the decision cache",
                                           ["route", "result"])
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
        self.shadow_picks = self.counter("semproxy_shadow_picks_total",
                                         "Shadow table decisions by the instance it would serve",
                                         ["route", "instance"])
        self.shadow_agreement = self.counter("semproxy_shadow_agreement_total",
                                             "Shadow decisions that agree with the serving pick",
                                             ["route", "agree"])
        self.shadow_errors = self.counter("semproxy_shadow_errors_total",
                                          "Shadow decisions that could not score the prompt",
                                          ["route", "reason"])
        self.shadow_dropped = self.counter("semproxy_shadow_dropped_total",
                                           "Shadow decisions skipped because the queue was full",
                                           ["route"])
        self.budget = self.counter("semproxy_budget_routing_total",
                                   "Semantic decisions read again by budget-aware routing: the "
                                   "pick kept (served = pick) or moved to a cheaper instance",
                                   ["route", "tier", "pick", "served"])
        # Counters kept as plain numbers elsewhere (governance), folded in at scrape time.
        self._folded: dict[str, Counter] = {}
        self._seen: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.cache_metrics = CacheMetrics(r, self._child)
        self._shed_seen = 0
        self._version: str | None = None

    def counter(self, name: str, documentation: str, labels: Sequence[str]) -> CounterTally:
        """A labelled counter in this registry, counted as a tally."""
        tally = CounterTally(Counter(name, documentation, labels, registry=self.registry))
        self.folding.tallies.append(tally)
        return tally

    def histogram(self, name: str, documentation: str, labels: Sequence[str],
                  buckets: Sequence[float]) -> HistogramTally:
        """A labelled histogram in this registry, observed as a tally."""
        metric = Histogram(name, documentation, labels, buckets=buckets, registry=self.registry)
        tally = HistogramTally(metric, buckets)
        self.folding.tallies.append(tally)
        return tally

    def _child(self, metric: Any, *labels: str) -> Any:
        """The labelled series of a metric not kept as a tally (the cache's, the folded
        governance counters), looked up once: `labels()` validates and locks per call."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    # -- RequestObserver ---------------------------------------------------
    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        self.attempts.add((route, instance, outcome))
        self.upstream.observe((route, instance), seconds)

    def on_failover(self, route: str, source: str, target: str, cause: str) -> None:
        self.failovers.add((route, source, target, cause))

    def on_semantic(self, route: str, decision: DecisionView, prompt: str | None = None
                    ) -> None:
        self.semantic.add((route, decision.pick, decision.reason))

    def on_shadow(self, route: str, serving: str, decision: DecisionView) -> None:
        if not decision.ranking:  # not scored (embedding failed): no pick to compare
            self.shadow_errors.add((route, decision.reason))
            return
        self.shadow_picks.add((route, decision.pick))
        self.shadow_agreement.add((route, "true" if decision.pick == serving else "false"))

    def on_shadow_dropped(self, route: str) -> None:
        self.shadow_dropped.add((route,))

    def on_budget(self, route: str, tier: int, pick: str, served: str) -> None:
        self.budget.add((route, str(tier), pick, served))

    def on_cache(self, route: str, status: str, layer: str | None) -> None:
        self.cache_metrics.on_cache(route, status, layer)

    def on_cache_store(self, route: str, outcome: str) -> None:
        self.cache_metrics.on_cache_store(route, outcome)

    def on_cache_saved(self, route: str, usage: Usage, money: float) -> None:
        self.cache_metrics.on_cache_saved(route, usage, money)

    def on_cache_shadow(self, route: str, layer: str, similarity: float | None,
                        wrong: bool) -> None:
        self.cache_metrics.on_cache_shadow(route, layer, similarity, wrong)

    # -- the rest of the gateway -------------------------------------------
    def on_counts(self, rows: Iterable[FoldedCount]) -> None:
        """Fold counters kept as plain numbers (totals so far) into Prometheus counters:
        each series grows by what its total grew since the last fold."""
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
            # A series shows from its first fold, at 0 too (a rate over it starts there).
            child = self._child(metric, *(value for _, value in row.labels))
            if row.value > (seen or 0):
                child.inc(row.value - (seen or 0))

    def on_embedding(self, route: str, seconds: float | None, decision_cached: bool | None
                     ) -> None:
        if seconds is not None:  # a decision-cache hit embedded nothing: not a duration
            self.embedding.observe((route,), seconds)
        if decision_cached is not None:
            self.decision_cache.add((route, "hit" if decision_cached else "miss"))

    def on_embedding_cache(self, hit: bool) -> None:
        self.cache.add(("hit" if hit else "miss",))

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Usage | None, protocol: str = "chat") -> None:
        self.requests.add((route, instance, _STATUS.get(status) or str(status), protocol))
        self.latency.observe((route,), seconds)
        if ttft is not None:
            self.ttft.observe((route, instance), ttft)
        if usage is not None:  # the kinds of observability/tokens.py
            given, made = usage.input, usage.output
            tokens = self.tokens
            if given:
                tokens.add((route, instance, PROMPT), given)
            if made:
                tokens.add((route, instance, COMPLETION), made)
            if given + made:
                tokens.add((route, instance, TOTAL), given + made)

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

    async def render(self) -> tuple[bytes, str]:
        """The exposition. With `--workers N`, after one fold interval: every worker has
        then folded the requests that ended before the scrape began."""
        if multiprocess_enabled():
            self.folding.fold()
            await asyncio.sleep(SCRAPE_WAIT_S)
            self.folding.fold()
            registry = CollectorRegistry()
            mp.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    async def fold_every(self, seconds: float = FOLD_INTERVAL_S) -> None:
        """With `--workers N`: fold this worker's tallies into its multiprocess files
        every `seconds`, until cancelled (a last fold then)."""
        try:
            while True:
                await asyncio.sleep(seconds)
                self.folding.fold()
        finally:
            self.folding.fold()
