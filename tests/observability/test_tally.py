"""Tallies: plain counts folded into their Prometheus metrics when the registry is collected,
giving what the metrics' own `inc` and `observe` give."""

from __future__ import annotations

import math
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram

from semproxy.observability.tally import CounterTally, Folding, HistogramTally, check_folding


def tallied(*, buckets: tuple[float, ...] = (0.25, 1)) -> tuple[
        CollectorRegistry, CounterTally, HistogramTally]:
    registry, folding = CollectorRegistry(), Folding()
    registry.register(folding)
    counts = CounterTally(Counter("c_total", "c", ["k"], registry=registry))
    times = HistogramTally(Histogram("h_seconds", "h", ["k"], buckets=buckets,
                                     registry=registry), buckets)
    folding.tallies += [counts, times]
    return registry, counts, times


def test_counts_are_summed_and_seen_at_the_next_collection() -> None:
    registry, counts, _ = tallied()
    counts.add(("x",))
    counts.add(("x",), 2)
    counts.add(("y",), 0.5)
    assert registry.get_sample_value("c_total", {"k": "x"}) == 3
    assert registry.get_sample_value("c_total", {"k": "y"}) == 0.5
    counts.add(("x",))
    assert registry.get_sample_value("c_total", {"k": "x"}) == 4


def test_a_value_on_a_bound_counts_in_that_bucket() -> None:
    registry, _, times = tallied()
    for value in (0.25, 0.1, 1.0, 3.0):
        times.observe(("x",), value)
    bucket = {le: registry.get_sample_value("h_seconds_bucket", {"k": "x", "le": le})
              for le in ("0.25", "1.0", "+Inf")}
    assert bucket == {"0.25": 2, "1.0": 3, "+Inf": 4}  # cumulative, as exposed
    assert registry.get_sample_value("h_seconds_sum", {"k": "x"}) == 4.35
    assert registry.get_sample_value("h_seconds_count", {"k": "x"}) == 4


def test_a_nan_falls_in_no_bucket_but_in_the_sum_as_with_observe() -> None:
    registry, _, times = tallied()
    times.observe(("x",), math.nan)
    times.observe(("x",), 0.5)
    assert registry.get_sample_value("h_seconds_count", {"k": "x"}) == 1
    assert math.isnan(registry.get_sample_value("h_seconds_sum", {"k": "x"}) or 0.0)


def test_sums_are_the_ones_observe_adds_up_to_the_bit() -> None:
    registry, _, times = tallied()
    own = Histogram("own_seconds", "h", ["k"], buckets=(0.25, 1), registry=CollectorRegistry())
    for i in range(1000):
        value = (i % 7) * 0.1 + i * 1e-9
        times.observe(("x",), value)
        own.labels("x").observe(value)
    folded = registry.get_sample_value("h_seconds_sum", {"k": "x"})
    assert folded is not None and folded.hex() == own.labels("x")._sum.get().hex()


def test_check_folding_passes_with_the_installed_prometheus_client() -> None:
    check_folding()


class SumElsewhere(Histogram):
    """A release that renamed a histogram child's sum."""

    def _metric_init(self) -> None:
        super()._metric_init()
        self._total = self._sum
        del self._sum

    def _child_samples(self) -> Any:
        self._sum = self._total
        try:
            return super()._child_samples()
        finally:
            del self._sum


class CumulativeBuckets(Histogram):
    """A release that keeps each bucket's count cumulative."""

    def observe(self, amount: float, exemplar: Any = None) -> None:
        self._sum.inc(amount)
        for bound, value in zip(self._upper_bounds, self._buckets, strict=True):
            if amount <= bound:
                value.inc(1)

    def _child_samples(self) -> Any:
        samples = list(super()._child_samples())
        # Undo the parent's running sum: the stored counts are cumulative already.
        counts = [v.get() for v in self._buckets]
        for i, count in enumerate(counts):
            samples[i] = samples[i]._replace(value=count)
        samples[len(counts)] = samples[len(counts)]._replace(value=counts[-1])
        return tuple(samples)


@pytest.mark.parametrize("histogram", [SumElsewhere, CumulativeBuckets])
def test_check_folding_refuses_a_prometheus_client_it_cannot_fold_into(
        histogram: type[Histogram]) -> None:
    with pytest.raises(RuntimeError, match=r"prometheus_client .*constraints\.txt"):
        check_folding(histogram=histogram)
