from collections import Counter

import pytest

from semproxy.balancer.chash import ConsistentHashPicker
from semproxy.balancer.priority import PriorityPicker, build_picker
from semproxy.balancer.roundrobin import WeightedRoundRobinPicker

ALL = ["p1", "p2", "s1", "s2"]


def two_tier() -> PriorityPicker:
    return PriorityPicker(
        [
            (["p1", "p2"], WeightedRoundRobinPicker({"p1": 1, "p2": 1})),
            (["s1", "s2"], WeightedRoundRobinPicker({"s1": 1, "s2": 1})),
        ]
    )


def test_higher_tier_takes_all_traffic_while_usable() -> None:
    picker = two_tier()
    chosen = [picker.pick(ALL, key=None, exclude=()) for _ in range(6)]
    assert chosen == ["p1", "p2"] * 3


def test_lower_tier_used_once_higher_tier_fully_excluded() -> None:
    picker = two_tier()
    assert picker.pick(ALL, key=None, exclude={"p1"}) == "p2"
    assert picker.pick(ALL, key=None, exclude={"p1", "p2"}) == "s1"
    assert picker.pick(ALL, key=None, exclude={"p1", "p2", "s1"}) == "s2"
    assert picker.pick(ALL, key=None, exclude=set(ALL)) is None


def test_lower_tier_used_when_higher_tier_not_among_candidates() -> None:
    picker = two_tier()
    assert picker.pick(["s2"], key=None, exclude=()) == "s2"


def test_tier_picker_only_sees_its_own_names() -> None:
    # The first tier's picker knows "s1" too, but must not be offered it.
    picker = PriorityPicker(
        [
            (["p1"], WeightedRoundRobinPicker({"p1": 1, "s1": 100})),
            (["s1"], WeightedRoundRobinPicker({"s1": 1})),
        ]
    )
    assert [picker.pick(["p1", "s1"], key=None, exclude=()) for _ in range(3)] == ["p1"] * 3


def test_build_picker_groups_by_priority_descending() -> None:
    picker = build_picker("roundrobin", [("low", 1, 0), ("high", 1, 5), ("mid", 1, 2)])
    names = ["low", "high", "mid"]
    assert picker.pick(names, key=None, exclude=()) == "high"
    assert picker.pick(names, key=None, exclude={"high"}) == "mid"
    assert picker.pick(names, key=None, exclude={"high", "mid"}) == "low"


def test_build_picker_keeps_weights_inside_a_tier() -> None:
    picker = build_picker("roundrobin", [("a", 3, 1), ("b", 1, 1), ("backup", 1, 0)])
    names = ["a", "b", "backup"]
    assert [picker.pick(names, key=None, exclude=()) for _ in range(4)] == ["a", "a", "b", "a"]


def test_build_picker_weight_zero_tier_falls_through() -> None:
    picker = build_picker("roundrobin", [("off", 0, 9), ("on", 1, 0)])
    assert picker.pick(["off", "on"], key=None, exclude=()) == "on"


def test_build_picker_single_tier_is_returned_unwrapped() -> None:
    picker = build_picker("chash", [("a", 1, 0), ("b", 2, 0)])
    assert isinstance(picker, ConsistentHashPicker)


def test_build_picker_chash_is_sticky_per_key_within_tier() -> None:
    picker = build_picker("chash", [("a", 1, 1), ("b", 1, 1), ("c", 1, 0)])
    names = ["a", "b", "c"]
    by_key = Counter(picker.pick(names, key=f"k{i}", exclude=()) for i in range(400))
    assert set(by_key) == {"a", "b"}
    for i in range(50):
        key = f"k{i}"
        assert picker.pick(names, key=key, exclude=()) == picker.pick(names, key=key, exclude=())


def test_build_picker_rejects_unknown_algorithm() -> None:
    with pytest.raises(ValueError, match="unknown balancer algorithm 'random'"):
        build_picker("random", [("a", 1, 0)])


def test_build_picker_with_no_instances_picks_nothing() -> None:
    assert build_picker("roundrobin", []).pick(["a"], key=None, exclude=()) is None
