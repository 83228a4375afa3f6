"""Rates with their sample size and a Wilson interval, checked against published values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from semproxy.cli import main
from semproxy.quality.metrics import Confusion
from semproxy.quality.rate import MeanRate, Rate, sample_warnings


@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    (5, 10, 0.2366, 0.7634),   # symmetric around one half
    (0, 10, 0.0, 0.2775),      # no successes: the interval still has width
    (10, 10, 0.7225, 1.0),
    (81, 100, 0.7222, 0.8749),
])
def test_wilson_interval_matches_the_textbook_values(successes: int, n: int, low: float,
                                                     high: float) -> None:
    interval = Rate(successes, n).interval
    assert interval is not None
    assert interval == pytest.approx((low, high), abs=1e-4)


def test_a_rate_prints_its_count_and_interval() -> None:
    assert Rate(81, 100).text() == " 81.0% (81/100, 95% CI 72.2-87.5%)"
    assert Rate(0, 0).value is None and Rate(0, 0).text() == "n/a (0 prompts)"
    assert Rate(3, 4).as_dict() == {"value": 0.75, "successes": 3, "n": 4,
                                    "low": pytest.approx(0.3006, abs=1e-4),
                                    "high": pytest.approx(0.9544, abs=1e-4)}


def test_more_prompts_narrow_the_interval() -> None:
    def width(n: int) -> float:
        low, high = Rate(n * 6 // 10, n).interval or (0, 0)
        return high - low
    assert width(30) > width(100) > width(3000)
    assert width(30) > 0.3 and width(3000) < 0.04


def test_balanced_accuracy_is_the_mean_of_recalls_with_an_interval() -> None:
    mean = MeanRate((Rate(9, 10), Rate(1, 10), Rate(0, 0)))
    assert mean.value == pytest.approx(0.5)  # the empty part does not count
    assert mean.n == 20
    low, high = mean.interval or (0, 0)
    assert low < 0.5 < high and high - low < Rate(10, 20).interval[1] * 2  # type: ignore[index]


def test_confusion_rates_count_what_the_floats_divide() -> None:
    c = Confusion(("a", "b", "catch"), np.array([[8, 1, 1], [0, 9, 1], [2, 0, 3]]))
    rates = c.rates()
    assert (rates["accuracy"].successes, rates["accuracy"].n) == (20, 25)  # type: ignore[union-attr]
    assert rates["in_scope_accuracy"].value == pytest.approx(17 / 20)
    assert rates["catchall_recall"].value == pytest.approx(3 / 5)
    assert rates["routed_precision"].value == pytest.approx(17 / 20)
    assert rates["balanced_accuracy"].value == pytest.approx(c.balanced_accuracy())
    pooled = c + c
    assert pooled.rates()["accuracy"].n == 50


def test_thin_classes_are_named_in_words() -> None:
    warnings = sample_warnings(["code", "cooking", "general"], [200, 12, 30])
    assert "only 30 out-of-scope prompts" in warnings[0] and "at least 100" in warnings[0]
    assert "cooking (12)" in warnings[1] and "code" not in warnings[1]
    assert "not measured at all" in sample_warnings(["a", "catch"], [50, 0])[0]
    assert sample_warnings(["a", "catch"], [100, 100]) == []


def test_eval_and_calibrate_print_counts_intervals_and_warnings(
    tmp_path: Path, config_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.quality.test_eval import write_inputs

    config, data = write_inputs(tmp_path, config_text)
    assert main(["eval", "--config", str(config), "--route", "r1", "--data", str(data),
                 "--folds", "2"]) == 0
    printed = capsys.readouterr().out
    assert "in-scope accuracy" in printed and "(6/6, 95% CI" in printed
    assert "warning: only 2 out-of-scope prompts" in printed
    assert "2-fold cross-validation over 8 prompts" in printed
    assert main(["eval", "--config", str(config), "--route", "r1", "--data", str(data),
                 "--json", "--folds", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rates"]["catchall_recall"]["n"] == 2
    assert out["cross_validated"]["folds"] == 2
    assert [m["name"] for m in out["cross_validated"]["measured"]][1] == \
        "threshold (cross-validated)"
    assert main(["calibrate", "--config", str(config), "--route", "r1", "--data", str(data),
                 "--folds", "1"]) == 2
    assert "at least 2" in capsys.readouterr().err
