from __future__ import annotations

import numpy as np
import pytest

from semproxy.quality.calibrate import fit, folds, objective, picks
from semproxy.semantic.decision import decide


def test_vectorised_picks_match_decide_on_random_scores() -> None:
    rng = np.random.default_rng(1)
    names = ["a", "b", "c", "d"]
    scores = rng.uniform(-0.2, 1.0, size=(400, 4)).round(2)  # rounding makes ties happen
    negative = rng.uniform(-0.2, 1.0, size=(400, 4))
    thresholds = np.array([0.3, 0.5, 0.2, 0.6])
    for min_margin in (0.0, 0.08):
        for neg in (None, negative):
            got = picks(scores, thresholds, min_margin, neg)
            want = [decide(names, scores[i], thresholds.tolist(), "catch", min_margin=min_margin,
                           negative=None if neg is None else neg[i]).pick for i in range(400)]
            assert [names[g] if g >= 0 else "catch" for g in got] == want


def test_fit_finds_a_threshold_that_separates_in_scope_from_the_rest() -> None:
    # Two instances; in-scope prompts score 0.6-0.9 on their own instance, the
    # off-topic ones at most 0.4 anywhere. Any threshold in (0.4, 0.6] is perfect.
    rng = np.random.default_rng(0)
    own = rng.uniform(0.6, 0.9, size=40)
    scores = np.zeros((60, 2))
    scores[:20, 0], scores[20:40, 1] = own[:20], own[20:]
    scores[:40] += np.where(scores[:40] == 0, 0.1, 0)
    scores[40:] = rng.uniform(0.0, 0.4, size=(20, 2))
    expected = np.array([0] * 20 + [1] * 20 + [2] * 20)
    result = fit(["a", "b", "catch"], scores, expected, objective("balanced"))
    assert 0.4 < result.threshold <= 0.6
    assert all(0.4 < t <= 0.6 for t in result.thresholds)


def test_precision_objective_trades_coverage_for_precision() -> None:
    # Instance a is right above 0.5 and wrong below it.
    scores = np.array([[0.9], [0.8], [0.7], [0.45], [0.4]])
    expected = np.array([0, 0, 0, 1, 1])  # 1 = the catchall
    result = fit(["a", "catch"], scores, expected, objective("precision=0.95"))
    assert 0.45 < result.threshold <= 0.7


@pytest.mark.parametrize("spec", ["precision=high", "recall"])
def test_unknown_objectives_are_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        objective(spec)


def test_folds_are_deterministic_stratified_and_order_free() -> None:
    texts = [f"prompt {i}" for i in range(100)]
    codes = [int(i % 10 == 0) for i in range(100)]  # 10 rare prompts, 90 common ones
    dealt = folds(texts, codes, 5)
    # Every fold holds 2 of the 10 rare prompts and 18 of the 90 others.
    assert [int(sum(codes[i] for i in range(100) if dealt[i] == f)) for f in range(5)] == [2] * 5
    assert sorted(int((dealt == f).sum()) for f in range(5)) == [20] * 5
    again = folds(texts[::-1], codes[::-1], 5)
    assert {t: int(f) for t, f in zip(texts, dealt, strict=True)} == \
        {t: int(f) for t, f in zip(texts[::-1], again, strict=True)}


def test_fewer_than_two_folds_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        folds(["a", "b"], [0, 1], 1)
