"""Counters and histograms kept as plain numbers in the event loop, folded into their
Prometheus metrics when the registry is collected.

`Counter.inc` and `Histogram.observe` take a lock, check the metric, and (a
histogram) walk its buckets in Python on every call; with several series per
request that was ~65k instructions of each request. A tally keeps the same
numbers in a dict keyed by label values: `add` and `observe` are a dict update
(and a `bisect`). `Folding`, registered first in the registry, sets every
changed series on its Prometheus child when the registry is collected (a
scrape, `get_sample_value`), so the exposition is the one the metric objects
always gave: same names, labels and values, `_created` included (a series is
created at its first count, as `labels()` did on the first `inc`). Values are
summed in the same order as the metric would, so they are equal to the bit.

How to count something new (see also `Metrics.counter` and `Metrics.histogram`):

    self.cost = metrics.counter("semproxy_x_total", "What it counts", ["route"])
    ...
    self.cost.add((route,), amount)          # on the request path: cheap
    self.waits = metrics.histogram("semproxy_x_seconds", "...", ["route"], BUCKETS)
    self.waits.observe((route,), seconds)

Label values are a tuple of strings in the metric's label order; amounts are
never negative (not checked: a counter only goes up). A tally must be used
from the event loop's thread only. Gauges and rarely-updated metrics stay plain
Prometheus objects.

Setting a child's value needs prometheus_client internals (a child's `_value`,
a histogram's `_buckets` and `_sum`), so the version is capped in
pyproject.toml and `check_folding` proves, before any tally is used, that a
folded tally collects exactly as the metric's own updates do; a gateway
refuses to start, naming prometheus_client, when it does not.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from importlib.metadata import version
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.metrics_core import Metric


class Tally(Protocol):
    def fold(self) -> None:
        """Set every series that changed since the last fold on its Prometheus child."""


class CounterTally:
    """A labelled Counter whose counts live in a dict until the next fold."""

    __slots__ = ("_children", "_folded", "_metric", "_totals")

    def __init__(self, metric: Counter) -> None:
        self._metric = metric
        self._totals: dict[tuple[str, ...], float] = {}
        self._children: dict[tuple[str, ...], Any] = {}
        self._folded: dict[tuple[str, ...], float] = {}

    def add(self, labels: tuple[str, ...], amount: float = 1) -> None:
        totals = self._totals
        total = totals.get(labels)
        if total is None:
            total = self._open(labels)
        totals[labels] = total + amount

    def _open(self, labels: tuple[str, ...]) -> float:
        # The series is created at its first count, as `labels()` did on the first
        # `inc`: its `_created` sample and its place in the exposition stay the same.
        self._children[labels] = self._metric.labels(*labels)
        return 0.0

    def fold(self) -> None:
        folded = self._folded
        for labels, total in self._totals.items():
            if folded.get(labels) != total:
                self._children[labels]._value.set(total)
                folded[labels] = total


class HistogramTally:
    """A labelled Histogram whose buckets and sums live in a dict until the next fold.

    Each series is a list: the count of each bucket (not cumulative, as the
    metric keeps them), then the sum.
    """

    __slots__ = ("_bounds", "_children", "_folded", "_metric", "_series")

    def __init__(self, metric: Histogram, buckets: Sequence[float]) -> None:
        self._metric = metric
        bounds = [float(b) for b in buckets]
        if bounds[-1] != math.inf:
            bounds.append(math.inf)
        self._bounds = tuple(bounds)
        self._series: dict[tuple[str, ...], list[float]] = {}
        self._children: dict[tuple[str, ...], Any] = {}
        self._folded: dict[tuple[str, ...], list[float]] = {}

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        series = self._series.get(labels)
        if series is None:
            series = self._open(labels)
        if value == value:  # a NaN falls in no bucket, as with Histogram.observe
            # The first bound >= value: the bucket `observe` would count it in.
            series[bisect_left(self._bounds, value)] += 1
        series[-1] += value

    def _open(self, labels: tuple[str, ...]) -> list[float]:
        self._children[labels] = self._metric.labels(*labels)
        series = self._series[labels] = [0.0] * (len(self._bounds) + 1)
        return series

    def fold(self) -> None:
        folded = self._folded
        for labels, series in self._series.items():
            if folded.get(labels) != series:
                child = self._children[labels]
                for value, count in zip(child._buckets, series, strict=False):
                    value.set(count)
                child._sum.set(series[-1])
                folded[labels] = series.copy()


class Folding:
    """A collector that yields nothing and folds every tally: registered before the
    metrics, it runs first whenever the registry is collected."""

    def __init__(self) -> None:
        self.tallies: list[Tally] = []

    def fold(self) -> None:
        for tally in self.tallies:
            tally.fold()

    def collect(self) -> Iterable[Metric]:
        self.fold()
        return ()

    def describe(self) -> Iterable[Metric]:
        return ()


# On a bound, between, beyond the last, negative, inexact sums, infinite, not a number.
PROBE_VALUES = (0.1, 0.003, 0.5, 1.0, 2.0, 1e9, -1.0, 0.1 + 0.2, math.inf, math.nan)


def check_folding(counter: type[Counter] = Counter, histogram: type[Histogram] = Histogram
                  ) -> None:
    """Raise RuntimeError unless, with the prometheus_client installed, folded tallies
    collect exactly as the metrics' own `inc` and `observe` do.

    Run while the process keeps its metrics in memory (not in a multiprocess
    directory, where the probe's series would be written out for every scrape).
    """
    try:
        own, folded = CollectorRegistry(), CollectorRegistry()
        folding = Folding()
        folded.register(folding)
        own_counter = counter("probe_total", "probe", ["k"], registry=own)
        own_histogram = histogram("probe_seconds", "probe", ["k"], buckets=(0.1, 1),
                                  registry=own)
        counts = CounterTally(counter("probe_total", "probe", ["k"], registry=folded))
        times = HistogramTally(histogram("probe_seconds", "probe", ["k"], buckets=(0.1, 1),
                                         registry=folded), (0.1, 1))
        folding.tallies += [counts, times]
        for i, value in enumerate(PROBE_VALUES):
            key = ("a" if i % 2 else "b",)
            own_counter.labels(*key).inc(abs(value) if value == value else 1)
            counts.add(key, abs(value) if value == value else 1)
            own_histogram.labels(*key).observe(value)
            times.observe(key, value)
        same = _samples(own) == _samples(folded)
    except (AttributeError, TypeError, ValueError, IndexError) as exc:
        raise _refusal(f"{type(exc).__name__}: {exc}") from exc
    if not same:
        raise _refusal("a folded tally collects other values than the metric's own updates")


def _samples(registry: CollectorRegistry) -> list[tuple[str, tuple[tuple[str, str], ...], str]]:
    # Values as text, so NaN equals NaN; `_created` is the time of creation, not a count.
    return [(s.name, tuple(sorted(s.labels.items())), repr(s.value))
            for family in registry.collect() for s in family.samples
            if not s.name.endswith("_created")]


def _refusal(why: str) -> RuntimeError:
    return RuntimeError(f"semproxy's metric tallies do not work with prometheus_client "
                        f"{version('prometheus_client')} ({why}). Install the "
                        "prometheus_client pinned in constraints.txt.")
