"""The budget tier rule with numbers checked by hand (governance/tiers.py).

Route: `big` (blended price 4.0), `mid` (2.0), `small` (1.0, the catchall).
Thresholds 0.5 everywhere; margins 0.1 at tier 1, 0.3 at tier 2.
"""

from __future__ import annotations

import pytest

from semproxy.governance.tiers import TierPolicy, blended, budget_pick, reordered

POLICY = TierPolicy((0.1, 0.3), {"big": 4.0, "mid": 2.0, "small": 1.0})
THRESHOLDS = {"big": 0.5, "mid": 0.5, "small": 0.5}


def pick(scores: dict[str, float], tier: int, policy: TierPolicy = POLICY,
         catchall: str = "small") -> str | None:
    ranking = sorted(scores.items(), key=lambda kv: -kv[1])
    cleared = [n for n, s in ranking if s >= THRESHOLDS[n]]
    choice = budget_pick(cleared[0], ranking, THRESHOLDS, cleared, catchall, tier, policy)
    return None if choice is None else choice.to


def test_blended_price_is_three_parts_input_one_part_output() -> None:
    assert blended(2.0, 10.0) == 0.75 * 2 + 0.25 * 10 == 4.0
    assert blended(2.0, 10.0, input_share=0.5) == 6.0


def test_below_the_first_tier_nothing_moves() -> None:
    assert pick({"big": 0.55, "mid": 0.52}, tier=0) is None


def test_a_weak_match_moves_to_the_best_cheaper_match_at_tier_one() -> None:
    # big clears by 0.05 < 0.1: moves; mid cleared too and is cheaper: it serves.
    assert pick({"big": 0.55, "mid": 0.52}, tier=1) == "mid"


def test_a_strong_match_keeps_the_dear_instance() -> None:
    # big clears by 0.2 >= 0.1 at tier 1; at tier 2 it needs 0.3 and moves.
    assert pick({"big": 0.70, "mid": 0.52}, tier=1) == "big"
    assert pick({"big": 0.70, "mid": 0.52}, tier=2) == "mid"
    assert pick({"big": 0.85, "mid": 0.52}, tier=2) == "big"  # clears by 0.35


def test_the_last_margin_holds_for_further_tiers() -> None:
    assert pick({"big": 0.85, "mid": 0.2}, tier=5) == "big"
    assert pick({"big": 0.75, "mid": 0.2}, tier=5) == "small"


def test_with_no_cheaper_match_the_cheaper_catchall_serves() -> None:
    # mid did not clear its threshold; the catchall small is cheaper than big.
    assert pick({"big": 0.55, "mid": 0.30}, tier=1) == "small"


def test_with_a_dear_catchall_the_best_scoring_cheaper_instance_serves() -> None:
    policy = TierPolicy((0.1,), {"big": 4.0, "mid": 2.0, "small": 1.0, "fallback": 9.0})
    scores = {"big": 0.55, "mid": 0.30, "small": 0.40}
    assert pick(scores, tier=1, policy=policy, catchall="fallback") == "small"


def test_the_cheapest_pick_never_moves() -> None:
    assert pick({"small": 0.51, "big": 0.2}, tier=2) == "small"


def test_a_pick_without_a_price_is_left_alone() -> None:
    policy = TierPolicy((0.1,), {"mid": 2.0, "small": 1.0})
    assert pick({"big": 0.55, "mid": 0.52}, tier=1, policy=policy) is None


def test_the_choice_records_strength_and_margin() -> None:
    ranking = [("big", 0.55), ("mid", 0.52)]
    choice = budget_pick("big", ranking, THRESHOLDS, ["big", "mid"], "small", 1, POLICY)
    assert choice is not None and choice.moved
    assert choice.strength == pytest.approx(0.05) and choice.keep_margin == 0.1


def test_the_moved_to_instance_goes_first_and_the_rest_keep_their_order() -> None:
    assert reordered(("big", "mid", "small"), "mid") == ("mid", "big", "small")
