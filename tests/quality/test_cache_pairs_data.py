"""The response-cache evaluation set: rebuilt byte-identical, halves kept apart.

test2 is the held-out half written after tune and test: it must share no pair and no
paraphrase prompt with them, draw its crowd paraphrases from other intents, and give
its edits other fillers than the ones tune saw (scripts/cache_pairs_test2.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from scripts import cache_pairs_edits as edits
from scripts import gen_cache_pairs as gen

DATA = Path(__file__).parent / "data/cache"
CLINC = Path(__file__).resolve().parents[2] / "../shared/data/clinc150_train_val.json"


def rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]


@pytest.mark.skipif(not CLINC.exists(), reason=f"CLINC150 data not found at {CLINC}")
def test_the_generator_rebuilds_every_committed_half_byte_identical() -> None:
    for name, built in gen.build(CLINC).items():
        assert gen.lines(built) == (DATA / f"{name}.jsonl").read_text(encoding="utf-8"), name


def test_test2_shares_no_pair_and_no_paraphrase_prompt_with_tune_or_test() -> None:
    earlier = rows("tune") + rows("test")
    seen_pairs = {frozenset((r["a"], r["b"])) for r in earlier}
    seen_prompts = {t for r in earlier for t in (r["a"], r["b"])}
    test2 = rows("test2")
    assert not seen_pairs & {frozenset((r["a"], r["b"])) for r in test2}
    for row in test2:
        if row["kind"] in ("crowd", "chat"):
            assert row["a"] not in seen_prompts and row["b"] not in seen_prompts, row
    crowd_before = {r["group"] for r in earlier if r["kind"] == "crowd"}
    assert not crowd_before & {r["group"] for r in test2 if r["kind"] == "crowd"}


def test_each_half_is_large_enough_and_every_group_is_on_one_side() -> None:
    for name in ("tune", "test", "test2"):
        same = sum(r["same"] for r in rows(name))
        assert same >= 600 and len(rows(name)) - same >= 600, name
    sides: dict[str, set[str]] = {}
    for name in ("tune", "test"):
        for row in rows(name):
            sides.setdefault(row["group"], set()).add(name)
    assert all(len(found) == 1 for found in sides.values())


def test_the_two_edit_pools_share_no_filler() -> None:
    a = set(edits.A.prefixes) | set(edits.A.suffixes)
    b = set(edits.B.prefixes) | set(edits.B.suffixes)
    assert not a & b
    assert not {w for _, w in edits.A.contractions} & {w for _, w in edits.B.contractions}


def test_a_typo_changes_one_word_and_never_its_first_letter() -> None:
    rng = random.Random(0)
    for _ in range(200):
        text = "please reverse the string quickly"
        slipped = edits.typo(text, rng)
        changed = [(x, y) for x, y in zip(text.split(), slipped.split(), strict=True) if x != y]
        assert len(changed) == 1 and changed[0][0][0] == changed[0][1][0]
