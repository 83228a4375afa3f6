from collections import Counter

import pytest

from semproxy.balancer.roundrobin import WeightedRoundRobinPicker


def picks(picker: WeightedRoundRobinPicker, names: list[str], n: int) -> list[str | None]:
    return [picker.pick(names, key=None, exclude=()) for _ in range(n)]


def test_weights_3_to_1_give_exact_smooth_sequence() -> None:
    picker = WeightedRoundRobinPicker({"a": 3, "b": 1})
    assert picks(picker, ["a", "b"], 8) == ["a", "a", "b", "a"] * 2


def test_weights_5_1_1_interleave_like_nginx() -> None:
    picker = WeightedRoundRobinPicker({"a": 5, "b": 1, "c": 1})
    assert picks(picker, ["a", "b", "c"], 7) == ["a", "a", "b", "a", "c", "a", "a"]


def test_equal_weights_alternate() -> None:
    picker = WeightedRoundRobinPicker({"a": 1, "b": 1})
    assert picks(picker, ["a", "b"], 4) == ["a", "b", "a", "b"]


def test_long_run_ratio_follows_weights() -> None:
    picker = WeightedRoundRobinPicker({"a": 2, "b": 3, "c": 5})
    counts = Counter(picks(picker, ["a", "b", "c"], 1000))
    assert counts == {"a": 200, "b": 300, "c": 500}


def test_weight_zero_is_never_picked() -> None:
    picker = WeightedRoundRobinPicker({"a": 0, "b": 1})
    assert set(picks(picker, ["a", "b"], 10)) == {"b"}
    assert picker.pick(["a"], key=None, exclude=()) is None


def test_excluded_name_is_skipped() -> None:
    picker = WeightedRoundRobinPicker({"a": 3, "b": 1})
    assert picker.pick(["a", "b"], key=None, exclude={"a"}) == "b"
    assert picker.pick(["a", "b"], key=None, exclude={"a", "b"}) is None


def test_only_candidates_are_returned() -> None:
    picker = WeightedRoundRobinPicker({"a": 3, "b": 1, "c": 1})
    assert set(picks(picker, ["b", "c"], 6)) == {"b", "c"}
    assert picker.pick(["unknown"], key=None, exclude=()) is None


def test_negative_weight_is_rejected() -> None:
    with pytest.raises(ValueError, match="weight"):
        WeightedRoundRobinPicker({"a": -1})
