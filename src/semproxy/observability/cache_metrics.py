"""The response cache's Prometheus metrics (part of `Metrics`, in the same registry).

Per route: lookups by result and layer (hits by layer, misses, bypasses,
refreshes), answers offered for storing by outcome, the upstream tokens and
money hits saved, and in shadow mode the would-hits and how many of them were
judged wrong. Per worker, read at scrape time: bytes and entries held by the
in-process stores, their evictions, store faults (a fault is a miss), and
background writes dropped because too many were running.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from semproxy.observability.tokens import COMPLETION, PROMPT
from semproxy.types import Usage

SIMILARITY_BUCKETS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0)
# X-AI-Cache-Status -> (result, layer) labels
RESULTS = {"HIT-L1": ("hit", "exact"), "HIT-L2": ("hit", "semantic"), "MISS": ("miss", ""),
           "BYPASS": ("bypass", ""), "REFRESH": ("refresh", "")}

Child = Callable[..., Any]


class CacheMetrics:
    def __init__(self, r: CollectorRegistry, child: Child) -> None:
        self._child = child
        self.lookups = Counter("semproxy_cache_requests_total",
                               "Requests on routes with ai-cache, by what the cache did "
                               "(hit by layer, miss, bypass, refresh)",
                               ["route", "result", "layer"], registry=r)
        self.stores = Counter("semproxy_cache_stores_total",
                              "Answers offered to the cache: stored, or why not",
                              ["route", "outcome"], registry=r)
        self.saved_tokens = Counter("semproxy_cache_saved_tokens_total",
                                    "Upstream tokens cache hits did not spend",
                                    ["route", "kind"], registry=r)
        self.saved_money = Counter("semproxy_cache_saved_money_total",
                                   "What those tokens would have cost (instance pricing)",
                                   ["route"], registry=r)
        self.shadow_hits = Counter("semproxy_cache_shadow_hits_total",
                                   "mode: shadow: requests that would have hit",
                                   ["route", "layer"], registry=r)
        self.shadow_wrong = Counter("semproxy_cache_shadow_wrong_total",
                                    "mode: shadow: would-hits whose answer was farther from "
                                    "the fresh one than shadow_threshold",
                                    ["route", "layer"], registry=r)
        self.shadow_similarity = Histogram(
            "semproxy_cache_shadow_answer_similarity",
            "mode: shadow: cosine of the would-be answer and the fresh one",
            ["route", "layer"], buckets=SIMILARITY_BUCKETS, registry=r)
        self.bytes = Gauge("semproxy_cache_bytes", "Bytes held by in-process cache stores",
                           registry=r, multiprocess_mode="livesum")
        self.entries = Gauge("semproxy_cache_entries", "Entries in in-process cache stores",
                             registry=r, multiprocess_mode="livesum")
        self.evictions = Counter("semproxy_cache_evictions_total",
                                 "Entries the in-process stores evicted to stay in bounds",
                                 registry=r)
        self.faults = Counter("semproxy_cache_faults_total",
                              "Cache store faults and timeouts (each answered as a miss)",
                              registry=r)
        self.dropped = Counter("semproxy_cache_jobs_dropped_total",
                               "Cache writes and shadow comparisons not run: too many running",
                               registry=r)
        self._seen = {"evictions": 0, "faults": 0, "dropped": 0}
        # The series every request of a cached route counts in (a lookup's result, a
        # store's outcome), by their labels: one dict read each, not `labels()`.
        self._series: dict[tuple[str, str, str], Any] = {}

    def on_cache(self, route: str, status: str, layer: str | None) -> None:
        series = self._series.get((route, "lookup", status))
        if series is None:
            result, kind = RESULTS.get(status, ("miss", ""))
            series = self._series[(route, "lookup", status)] = \
                self._child(self.lookups, route, result, kind)
        series.inc()

    def on_cache_store(self, route: str, outcome: str) -> None:
        series = self._series.get((route, "store", outcome))
        if series is None:
            series = self._series[(route, "store", outcome)] = \
                self._child(self.stores, route, outcome)
        series.inc()

    def on_cache_saved(self, route: str, usage: Usage, money: float) -> None:
        if usage.input:
            self._child(self.saved_tokens, route, PROMPT).inc(usage.input)
        if usage.output:
            self._child(self.saved_tokens, route, COMPLETION).inc(usage.output)
        if money > 0:
            self._child(self.saved_money, route).inc(money)

    def on_cache_shadow(self, route: str, layer: str, similarity: float | None,
                        wrong: bool) -> None:
        self._child(self.shadow_hits, route, layer).inc()
        if wrong:
            self._child(self.shadow_wrong, route, layer).inc()
        if similarity is not None:
            self._child(self.shadow_similarity, route, layer).observe(similarity)

    def on_state(self, held: int, entries: int, evictions: int, faults: int,
                 dropped: int) -> None:
        """Scrape time: the stores' sizes, and their counts so far (they only grow)."""
        self.bytes.set(held)
        self.entries.set(entries)
        for name, total, counter in (("evictions", evictions, self.evictions),
                                     ("faults", faults, self.faults),
                                     ("dropped", dropped, self.dropped)):
            if total > self._seen[name]:
                counter.inc(total - self._seen[name])
                self._seen[name] = total
