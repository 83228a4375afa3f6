import numpy as np
import pytest

from semproxy.quality.metrics import Confusion


def test_confusion_counts_and_derived_figures_by_hand() -> None:
    # a: 3 prompts, 2 right, 1 to the catchall; b: 2 right; catchall: 1 right, 1 to a.
    c = Confusion.from_names(
        ["a", "b", "fallback"],
        ["a", "a", "a", "b", "b", "fallback", "fallback"],
        ["a", "a", "fallback", "b", "b", "fallback", "a"],
    )
    assert c.counts.tolist() == [[2, 0, 1], [0, 2, 0], [1, 0, 1]]
    assert c.accuracy() == pytest.approx(5 / 7)
    assert c.recall(0) == pytest.approx(2 / 3)
    assert c.precision(0) == pytest.approx(2 / 3)
    assert c.balanced_accuracy() == pytest.approx((2 / 3 + 1 + 1 / 2) / 3)
    assert c.in_scope_accuracy() == pytest.approx(4 / 5)
    assert c.catchall_recall() == pytest.approx(1 / 2)
    assert c.routed_precision() == pytest.approx(4 / 5)


def test_labels_without_prompts_have_no_recall_and_do_not_count_in_the_balance() -> None:
    c = Confusion.from_codes(["a", "b", "fallback"], np.array([0, 0]), np.array([0, 1]))
    assert c.recall(1) is None
    assert c.catchall_recall() is None
    assert c.balanced_accuracy() == pytest.approx(0.5)
