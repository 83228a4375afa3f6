"""`semproxy calibrate --cache`: the rewording threshold for a named wrong-hit rate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from semproxy.quality import cache_pairs
from semproxy.quality.cache_pairs import Pair, calibrate, checks

PAIRS = [
    Pair("who made you", "which company programmed you", True, kind="crowd"),
    Pair("what is your name", "how should i address you", True, kind="crowd"),
    Pair("how many calories in a banana", "how many calories in a bananna", True, kind="edit"),
    Pair("how do i boil potatoes", "how do i broil potatoes", False),  # a swap: refused
    Pair("what is my credit limit", "what is my rewards balance on my card", False),
    Pair("tell me about my pto", "what time does the bank close", False),
]
SIMS = np.array([0.70, 0.50, 0.10, 0.99, 0.60, 0.30], dtype=np.float32)


def test_the_lowest_threshold_within_the_named_wrong_hit_rate_is_chosen() -> None:
    checked = checks(PAIRS)
    assert checked[2].same_words and checked[3].refused == "swap"
    strict = calibrate(PAIRS, SIMS, 0.0, checked)
    # 0.61 keeps the credit-limit rewording (0.60) out; the typo pair hits at any cosine
    assert strict.threshold == pytest.approx(0.61)
    assert (strict.paraphrases.successes, strict.wrong.successes) == (2, 0)
    loose = calibrate(PAIRS, SIMS, 0.34, checked)  # one wrong hit of three allowed
    assert loose.threshold == pytest.approx(0.31) and loose.paraphrases.successes == 3
    alone = calibrate(PAIRS, SIMS, 0.0, None)  # cosine alone must clear the swap's 0.99
    assert alone.threshold == 1.0 and alone.paraphrases.successes == 0


def test_the_command_prints_the_rule_and_refuses_a_nonsense_rate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"a": p.a, "b": p.b, "same": p.same}) + "\n"
                            for p in PAIRS))
    args = argparse.Namespace(cache=str(path), wrong_hits="0.01", model="wordllama")
    assert cache_pairs.run(args) == 0
    out = capsys.readouterr().out
    assert "similarity_threshold" in out and "wrong hits" in out
    with pytest.raises(ValueError, match="wrong-hits"):
        cache_pairs.run(argparse.Namespace(cache=str(path), wrong_hits="1.5",
                                           model="wordllama"))
