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
    # off-topic ones below 0.4 anywhere. Any threshold above the highest
    # off-topic score and at most 0.6 is perfect.
    rng = np.random.default_rng(0)
    own = rng.uniform(0.6, 0.9, size=40)
    scores = np.zeros((60, 2))
    scores[:20, 0], scores[20:40, 1] = own[:20], own[20:]
    scores[:40] += np.where(scores[:40] == 0, 0.1, 0)
    scores[40:] = rng.uniform(0.0, 0.4, size=(20, 2))
    expected = np.array([0] * 20 + [1] * 20 + [2] * 20)
    result = fit(["a", "b", "catch"], scores, expected, objective("balanced"))
    highest = scores[40:].max()
    assert highest < result.threshold <= 0.6
    assert all(highest < t <= 0.6 for t in result.thresholds)


def test_precision_objective_trades_coverage_for_precision() -> None:
    # Instance a is right above 0.5 and wrong below it.
    scores = np.array([[0.9], [0.8], [0.7], [0.45], [0.4]])
    expected = np.array([0, 0, 0, 1, 1])  # 1 = the catchall
    result = fit(["a", "catch"], scores, expected, objective("precision=0.95"))
    assert 0.45 < result.threshold <= 0.7


def test_oos_recall_objective_keeps_in_scope_prompts_while_meeting_the_recall() -> None:
    # Four catchall prompts score 0.30, 0.35, 0.50 and 0.60; in-scope prompts
    # (all right) score 0.40 to 0.95. Rejecting half of the catchall prompts
    # needs a threshold above 0.35, and any threshold above 0.40 loses an
    # in-scope prompt for nothing; `balanced` would reject more.
    top = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.55, 0.45, 0.4, 0.3, 0.35, 0.5, 0.6]
    scores = np.array(top)[:, None]
    expected = np.array([0] * 10 + [1] * 4)
    half = fit(["a", "catch"], scores, expected, objective("oos_recall=0.5"))
    assert 0.35 < half.threshold <= 0.4
    most = fit(["a", "catch"], scores, expected, objective("oos_recall=0.75"))
    assert 0.5 < most.threshold <= 0.55  # the cheapest threshold that rejects three
    assert fit(["a", "catch"], scores, expected, objective("oos_recall=0")).threshold == -1.0


def test_oos_recall_thresholds_sit_just_above_a_catchall_prompt() -> None:
    # 1,000 in-scope prompts and 10 catchall ones: quantiles of all top scores
    # step 1% of the prompts at a time, too coarse for a recall constraint. The
    # fit must find the cut just above the 5th catchall prompt, as written to
    # config (4 places).
    rng = np.random.default_rng(3)
    inside = rng.uniform(0.2, 0.9, size=1000)
    outside = np.array([0.11, 0.13, 0.17, 0.19, 0.23806, 0.31, 0.4, 0.5, 0.6, 0.7])
    scores = np.concatenate([inside, outside])[:, None]
    expected = np.array([0] * 1000 + [1] * 10)
    result = fit(["a", "catch"], scores, expected, objective("oos_recall=0.5"))
    assert result.threshold == 0.2381


@pytest.mark.parametrize("spec", ["precision=high", "recall", "oos_recall=1.5", "oos_recall=",
                                  "precision=-0.1"])
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
