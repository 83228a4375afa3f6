from collections import Counter

import pytest

from semproxy.balancer.chash import ConsistentHashPicker, stable_hash

KEYS = [f"user-{i}" for i in range(10_000)]


def owners(picker: ConsistentHashPicker, names: list[str]) -> dict[str, str | None]:
    return {key: picker.pick(names, key=key, exclude=()) for key in KEYS}


def test_stable_hash_is_fixed_across_processes() -> None:
    # A literal value: if it changed, every running ring would reshuffle its keys.
    assert stable_hash("session-42") == 0x28BD467CBC4B1AAC
    assert stable_hash("abc") != stable_hash("abd")


def test_same_key_always_same_instance() -> None:
    picker = ConsistentHashPicker({"a": 1, "b": 1, "c": 1})
    first = picker.pick(["a", "b", "c"], key="session-42", exclude=())
    assert first is not None
    again = ConsistentHashPicker({"a": 1, "b": 1, "c": 1})
    for _ in range(20):
        assert again.pick(["a", "b", "c"], key="session-42", exclude=()) == first


def test_none_key_is_the_empty_string() -> None:
    picker = ConsistentHashPicker({"a": 1, "b": 1, "c": 1})
    assert picker.pick(["a", "b", "c"], key=None, exclude=()) == picker.pick(
        ["a", "b", "c"], key="", exclude=()
    )


def test_distribution_roughly_follows_weights() -> None:
    picker = ConsistentHashPicker({"a": 1, "b": 2, "c": 1})
    counts = Counter(owners(picker, ["a", "b", "c"]).values())
    assert counts["b"] / len(KEYS) == pytest.approx(0.5, abs=0.07)
    assert counts["a"] / len(KEYS) == pytest.approx(0.25, abs=0.07)
    assert counts["c"] / len(KEYS) == pytest.approx(0.25, abs=0.07)


def test_adding_an_instance_moves_about_a_quarter_all_to_the_new_one() -> None:
    before = owners(ConsistentHashPicker({"a": 1, "b": 1, "c": 1}), ["a", "b", "c"])
    after = owners(ConsistentHashPicker({"a": 1, "b": 1, "c": 1, "d": 1}), ["a", "b", "c", "d"])
    moved = [key for key in KEYS if before[key] != after[key]]
    assert len(moved) / len(KEYS) == pytest.approx(0.25, abs=0.07)
    assert {after[key] for key in moved} == {"d"}


def test_removing_an_instance_moves_only_its_keys() -> None:
    before = owners(ConsistentHashPicker({"a": 1, "b": 1, "c": 1, "d": 1}), ["a", "b", "c", "d"])
    after = owners(ConsistentHashPicker({"a": 1, "b": 1, "c": 1}), ["a", "b", "c"])
    moved = [key for key in KEYS if before[key] != after[key]]
    assert moved
    assert {before[key] for key in moved} == {"d"}


def test_excluding_an_instance_acts_like_removing_it() -> None:
    picker = ConsistentHashPicker({"a": 1, "b": 1, "c": 1})
    for key in KEYS[:500]:
        owner = picker.pick(["a", "b", "c"], key=key, exclude=())
        spill = picker.pick(["a", "b", "c"], key=key, exclude={owner} if owner else set())
        assert spill is not None and spill != owner


def test_weight_zero_and_unusable_names_are_never_picked() -> None:
    picker = ConsistentHashPicker({"a": 0, "b": 1})
    assert {picker.pick(["a", "b"], key=k, exclude=()) for k in KEYS[:200]} == {"b"}
    assert picker.pick(["a"], key="x", exclude=()) is None
    assert picker.pick(["b"], key="x", exclude={"b"}) is None
    assert picker.pick(["zzz"], key="x", exclude=()) is None


def test_candidate_filter_restricts_the_answer() -> None:
    picker = ConsistentHashPicker({"a": 1, "b": 1, "c": 1})
    assert {picker.pick(["c"], key=k, exclude=()) for k in KEYS[:200]} == {"c"}
