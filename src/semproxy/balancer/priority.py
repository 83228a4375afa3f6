"""Priority tiers: use a lower tier only when the higher one has nothing usable.

This mirrors APISIX ``priority``: instances with a higher priority number
take all traffic while any of them is usable; the next tier is a standby
that only sees requests once the tier above is excluded or unhealthy.
Within a tier an ordinary picker (round-robin or hash) spreads the load.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import groupby

from semproxy.balancer.base import Picker
from semproxy.balancer.chash import ConsistentHashPicker
from semproxy.balancer.roundrobin import WeightedRoundRobinPicker


class PriorityPicker:
    """Try each tier in order; the first tier that yields a name wins.

    ``tiers`` are ``(names, picker)`` pairs, highest priority first. Each
    tier's picker only ever sees candidates that belong to that tier.
    """

    def __init__(self, tiers: Sequence[tuple[Sequence[str], Picker]]) -> None:
        self._tiers = [(frozenset(names), picker) for names, picker in tiers]

    def pick(
        self, candidates: Sequence[str], *, key: str | None, exclude: Collection[str]
    ) -> str | None:
        """Return a name from the highest tier that has a usable candidate."""
        for names, picker in self._tiers:
            in_tier = [name for name in candidates if name in names]
            if not in_tier:
                continue
            chosen = picker.pick(in_tier, key=key, exclude=exclude)
            if chosen is not None:
                return chosen
        return None


# Algorithm name (the config's balancer.algorithm) -> picker for one tier.
# Semantic routes order their unmatched remainder with "roundrobin".
PICKERS: Mapping[str, Callable[[Mapping[str, int]], Picker]] = {
    "roundrobin": WeightedRoundRobinPicker,
    "chash": ConsistentHashPicker,
}


def build_picker(algorithm: str, instances: Sequence[tuple[str, int, int]]) -> Picker:
    """Build a picker from ``(name, weight, priority)`` triples.

    Instances are grouped by priority, highest first, keeping configuration
    order inside a tier. A single tier returns its picker unwrapped so the
    common case pays for no extra indirection.
    """
    factory = PICKERS.get(algorithm)
    if factory is None:
        known = ", ".join(sorted(PICKERS))
        raise ValueError(f"unknown balancer algorithm {algorithm!r} (known: {known})")
    # sorted() is stable, so configuration order survives within a priority.
    ordered = sorted(instances, key=lambda inst: -inst[2])
    tiers: list[tuple[Sequence[str], Picker]] = []
    for _, group in groupby(ordered, key=lambda inst: inst[2]):
        members = list(group)
        weights = {name: weight for name, weight, _ in members}
        tiers.append((list(weights), factory(weights)))
    if len(tiers) == 1:
        return tiers[0][1]
    return PriorityPicker(tiers)
