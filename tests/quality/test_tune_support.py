"""`tune` adds only examples that gain, and with a small labelled set only what
cross-validation supports; it says how many labelled prompts it would need."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from semproxy.cli import main
from semproxy.quality.examples import Scoring, choose
from semproxy.quality.rate import Rate
from semproxy.quality.tune import Expected, supported

from .test_examples import LABELS, PROMPTS, A, B

COST = Path(__file__).parent / "data/cost_routing"


def test_only_examples_that_fix_more_than_they_break_are_proposed() -> None:
    # After the first pick fixes its cluster, every other candidate gains 0: adding
    # it only moves scores. (`--count 10` once wrote 9 such.)
    picks = choose([A, B], PROMPTS, LABELS, 6, Scoring("max"))
    assert [p.gain for p in picks] == [4]


def expected(count: int, fixed: int, broken: int, n: int = 200) -> Expected:
    return Expected(5, Rate(150, n), Rate(150 + fixed - broken, n), fixed, broken, count)


def test_the_supported_count_is_the_best_one_whose_interval_clears_zero() -> None:
    noisy = [expected(0, 0, 0), expected(1, 3, 1), expected(2, 4, 1)]
    assert supported(noisy).count == 0  # +3 of 200: the interval straddles zero
    clear = [expected(0, 0, 0), expected(1, 12, 0), expected(2, 20, 2), expected(3, 20, 2)]
    assert supported(clear).count == 2  # the best net gain; the fewest picks on a tie
    assert clear[2].is_trusted and not noisy[2].is_trusted
    needed = noisy[2].prompts_needed()
    assert needed is not None and needed > 200
    assert expected(1, 2, 2).prompts_needed() is None  # no gain: no size makes one


def test_on_a_small_labelled_set_tune_writes_nothing_and_says_what_it_would_need(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 157 labelled in-scope prompts: the picks' cross-validated gain is +0.0 points
    # (95% CI -3.5 to +3.5). Before, `--write` added every pick all the same.
    out = tmp_path / "tuned.yaml"
    assert main(["tune", "--config", str(COST / "config.yaml"), "--route", "cost", "--data",
                 str(COST / "prompts.jsonl"), "--count", "50", "--write", str(out)]) == 0
    printed = capsys.readouterr()
    assert "cross-validation supports none of them" in printed.out
    assert re.search(r"would need about \d+ labelled in-scope prompts", printed.out)
    assert "(0 examples added)" in printed.err
    assert out.read_text() == (COST / "config.yaml").read_text()
    assert main(["tune", "--config", str(COST / "config.yaml"), "--route", "cost", "--data",
                 str(COST / "prompts.jsonl"), "--count", "50", "--write", str(out),
                 "--allow-unsupported"]) == 0
    assert "examples added" in capsys.readouterr().err
    assert out.read_text() != (COST / "config.yaml").read_text()
