"""Smooth weighted round-robin (the algorithm nginx uses for upstreams).

Plain weighted round-robin with weights a:5, b:1 sends five requests in a row
to ``a`` and then one to ``b``. The smooth variant interleaves them
(a a b a a a ...) so no instance sees a burst, while the long-run ratio is
still exactly the ratio of the weights.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence


class WeightedRoundRobinPicker:
    """Pick instances in proportion to their integer weights, smoothly.

    Each pick, every usable instance adds its weight to a running counter;
    the instance with the largest counter wins and has the sum of the usable
    weights subtracted from it. Ties go to the instance listed first in
    ``weights``, which makes the sequence deterministic. Only usable
    instances take part in a pick, so excluding one for a retry does not
    push the others off their rhythm.
    """

    def __init__(self, weights: Mapping[str, int]) -> None:
        for name, weight in weights.items():
            if weight < 0:
                raise ValueError(f"instance {name!r}: weight must be >= 0, got {weight}")
        # Weight-0 instances are dropped here: they can never win a pick.
        self._weights = {name: w for name, w in weights.items() if w > 0}
        self._current = dict.fromkeys(self._weights, 0)

    def pick(
        self, candidates: Sequence[str], *, key: str | None, exclude: Collection[str]
    ) -> str | None:
        """Return the next instance in smooth-WRR order; ``key`` is ignored."""
        usable = self._usable(candidates, exclude)
        if not usable:
            return None
        total = 0
        best: str | None = None
        for name in usable:
            weight = self._weights[name]
            self._current[name] += weight
            total += weight
            # Strict ">" keeps the earliest configured instance on ties.
            if best is None or self._current[name] > self._current[best]:
                best = name
        assert best is not None
        self._current[best] -= total
        return best

    def _usable(self, candidates: Sequence[str], exclude: Collection[str]) -> list[str]:
        """Usable names in configuration order, independent of candidate order."""
        allowed = set(candidates).difference(exclude)
        return [name for name in self._weights if name in allowed]
