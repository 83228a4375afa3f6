"""A measured rate with its sample size and a 95% interval, and warnings about thin samples.

Every figure `eval` and `calibrate` print is a share of some prompts, and a
share of 30 prompts says much less than a share of 3,000. `Rate` keeps the
count with the value and gives the Wilson score interval, which (unlike the
textbook p +- 1.96 sqrt(p(1-p)/n)) stays inside [0, 1] and behaves at 0 and
100% and for small n. Balanced accuracy is a mean of several such rates, not
one binomial share; `MeanRate` gives it an interval from the spread of its
parts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959964  # two-sided 95% normal quantile
FEW_CATCHALL = 100  # below this many out-of-scope prompts, say the recall is rough
FEW_PER_INSTANCE = 30


@dataclass(frozen=True, slots=True)
class Rate:
    """`successes` of `n` prompts; value None when n is 0."""

    successes: int
    n: int

    @property
    def value(self) -> float | None:
        return self.successes / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """Wilson score interval at 95%."""
        if not self.n:
            return None
        p, n, z2 = self.successes / self.n, self.n, Z95 * Z95
        middle = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
        return max(0.0, middle - half), min(1.0, middle + half)

    def text(self) -> str:
        """`76.3% (686/900, 95% CI 73.4-79.0%)`; `n/a (0 prompts)` when empty."""
        if not self.n:
            return "n/a (0 prompts)"
        low, high = self.interval or (0.0, 0.0)
        return (f"{100 * self.successes / self.n:5.1f}% ({self.successes}/{self.n}, "
                f"95% CI {100 * low:.1f}-{100 * high:.1f}%)")

    def as_dict(self) -> dict[str, Any]:
        low, high = self.interval or (None, None)
        return {"value": self.value, "successes": self.successes, "n": self.n,
                "low": low, "high": high}


@dataclass(frozen=True, slots=True)
class MeanRate:
    """The unweighted mean of several rates (balanced accuracy), with a normal interval.

    The parts are independent samples, so the variance of their mean is the
    sum of their variances over the number of parts squared; each part's
    variance uses its Wilson centre, so a part at 0% or 100% still counts.
    """

    parts: tuple[Rate, ...]

    @property
    def n(self) -> int:
        return sum(p.n for p in self.parts)

    @property
    def value(self) -> float | None:
        values = [p.value for p in self.parts if p.value is not None]
        return sum(values) / len(values) if values else None

    @property
    def interval(self) -> tuple[float, float] | None:
        used = [p for p in self.parts if p.n]
        value = self.value
        if value is None:
            return None
        variance = 0.0
        for part in used:
            low, high = part.interval or (0.0, 0.0)
            centre = (low + high) / 2
            variance += centre * (1 - centre) / part.n
        half = Z95 * math.sqrt(variance) / len(used)
        return max(0.0, value - half), min(1.0, value + half)

    def text(self) -> str:
        value, bounds = self.value, self.interval
        if value is None or bounds is None:
            return "n/a (0 prompts)"
        used = sum(1 for p in self.parts if p.n)
        return (f"{100 * value:5.1f}% (mean of {used} recalls, {self.n} prompts, "
                f"95% CI {100 * bounds[0]:.1f}-{100 * bounds[1]:.1f}%)")

    def as_dict(self) -> dict[str, Any]:
        low, high = self.interval or (None, None)
        return {"value": self.value, "n": self.n, "low": low, "high": high}


def sample_warnings(labels: Sequence[str], support: Sequence[int]) -> list[str]:
    """Plain-words warnings for classes with too few labelled prompts to trust.

    `labels` end with the catchall; `support[i]` is how many prompts belong to
    `labels[i]`.
    """
    out = []
    catch = support[-1]
    if catch == 0:
        out.append("no out-of-scope prompts (instance null): out-of-scope recall is not "
                   "measured at all, and thresholds are fitted without seeing any")
    elif catch < FEW_CATCHALL:
        half = _half_width(catch)
        out.append(f"only {catch} out-of-scope prompts: out-of-scope recall is known only "
                   f"to about +-{half:.0f} points; label at least {FEW_CATCHALL} for a "
                   f"figure you can compare")
    thin = [f"{name} ({n})" for name, n in zip(labels[:-1], support[:-1], strict=True)
            if n < FEW_PER_INSTANCE]
    if thin:
        out.append(f"instances with fewer than {FEW_PER_INSTANCE} labelled prompts, whose "
                   f"recall is rough: {', '.join(thin)}")
    return out


def _half_width(n: int) -> float:
    """Half the width of the widest (p = 50%) Wilson interval for n prompts, in points."""
    low, high = Rate(n // 2, n).interval or (0.0, 1.0)
    return 100 * (high - low) / 2
