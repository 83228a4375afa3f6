"""Budget-aware semantic routing: as a budget fills, weak matches of a dear instance move.

A consumer's money budget has tiers (`tiers: [0.75, 0.9]`: shares of the
budget); `Reservation.tier` says how many of them its spend has crossed. A
semantic route with `balancer.budget_routing` then reads each decision again
with this rule, a pure function of the decision's scores, the route's tier
policy and its prices:

- Only a matched decision can move (a prompt nothing matched already goes to
  the catchall), and only to an instance that is *cheaper*: a lower blended
  price per million tokens, `input_share * input + (1 - input_share) * output`
  (0.75 by default: three input tokens per output token, the blend price lists
  commonly quote).
- The pick keeps the prompt when its *strength*, how far its score clears its
  own threshold, is at least the tier's `keep_margin`. A margin grows with the
  tier, so the first tier moves only the prompts the dear instance matches
  weakly, the next tier more, and prompts it matches strongly keep it until the
  budget is spent (then the budget refuses everything: nothing is left to route).
- A prompt that moves goes where its meaning points among the cheaper
  instances: the best-scoring cheaper instance that cleared its threshold, else
  the catchall when it is cheaper, else the best-scoring cheaper instance.

Why the distance above the threshold, not the raw score: thresholds differ per
instance (set by hand, calibrated, or learned with `threshold: auto`), and the
threshold is where the route itself says a match begins; the margin above it
reads the same on every instance of the route. Why not "move the weakest x%":
that needs the distribution of future scores; a margin is decided per prompt,
the same way on every replica, with no state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_INPUT_SHARE = 0.75


@dataclass(frozen=True, slots=True)
class TierPolicy:
    """A route's `budget_routing`: the margin a dear pick must clear its threshold by to
    keep a prompt, per budget tier crossed (the last repeats for further tiers), and the
    blended price of each priced instance (per million tokens)."""

    keep_margin: tuple[float, ...]
    prices: Mapping[str, float]

    def margin(self, tier: int) -> float | None:
        """The keep margin at `tier` (None below the first tier: nothing moves)."""
        if tier <= 0 or not self.keep_margin:
            return None
        return self.keep_margin[min(tier, len(self.keep_margin)) - 1]


@dataclass(frozen=True, slots=True)
class BudgetChoice:
    """What the rule made of one decision at one tier: `to` serves (`to == pick`: kept)."""

    tier: int
    keep_margin: float
    pick: str
    to: str
    strength: float  # the pick's score minus its threshold

    @property
    def moved(self) -> bool:
        return self.to != self.pick


def blended(input_price: float, output_price: float,
            input_share: float = DEFAULT_INPUT_SHARE) -> float:
    """One price per million tokens for comparing instances."""
    return input_share * input_price + (1 - input_share) * output_price


def budget_pick(pick: str, ranking: Sequence[tuple[str, float]], thresholds: Mapping[str, float],
                cleared: Sequence[str], catchall: str, tier: int, policy: TierPolicy
                ) -> BudgetChoice | None:
    """The instance that serves a matched decision at `tier`; None when the rule does not
    apply (below the first tier, an unpriced pick, a pick without a score)."""
    margin = policy.margin(tier)
    prices = policy.prices
    own = prices.get(pick)
    if margin is None or own is None:
        return None
    score = next((s for name, s in ranking if name == pick), None)
    if score is None:
        return None
    strength = score - thresholds.get(pick, 0.0)
    kept = BudgetChoice(tier, margin, pick, pick, strength)
    if strength >= margin:
        return kept
    to = _cheaper_by_meaning(own, ranking, cleared, catchall, prices)
    return kept if to is None else BudgetChoice(tier, margin, pick, to, strength)


def _cheaper_by_meaning(own: float, ranking: Sequence[tuple[str, float]], cleared: Sequence[str],
                        catchall: str, prices: Mapping[str, float]) -> str | None:
    def cheaper(name: str) -> bool:
        price = prices.get(name)
        return price is not None and price < own

    for name in cleared:  # best first
        if cheaper(name):
            return name
    if cheaper(catchall):
        return catchall
    return next((name for name, _ in ranking if cheaper(name)), None)


def reordered(preferred: Sequence[str], to: str) -> tuple[str, ...]:
    """The candidate order with `to` first (failover can still reach the others)."""
    return (to, *(name for name in preferred if name != to))
