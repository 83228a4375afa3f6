"""`semproxy eval` on a tiny route with the real local model and obvious prompts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.quality.conftest import LABELLED

from semproxy.cli import main
from semproxy.config.loader import load_data, load_text
from semproxy.quality.evaluate import evaluate, route_batch
from semproxy.quality.labelled import parse_item
from semproxy.runtime.compile import router_for
from semproxy.semantic.query import prompt_input

OFF_TOPIC = [
    {"prompt": "who painted the mona lisa", "instance": None},
    {"prompt": "", "instance": None},  # no user text: the catchall, like the gateway
]


def write_inputs(tmp_path: Path, config_text: str) -> tuple[Path, Path]:
    config = tmp_path / "route.yaml"
    config.write_text(config_text)
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in [*LABELLED, *OFF_TOPIC]) + "\n")
    return config, data


def test_eval_cli_reports_a_hand_checkable_confusion_matrix(
    tmp_path: Path, config_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config, data = write_inputs(tmp_path, config_text)
    report = tmp_path / "report"
    code = main(["eval", "--config", str(config), "--route", "r1", "--data", str(data),
                 "--json", "--report", str(report)])
    assert code == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert out["confusion"]["labels"] == ["code", "cooking", "weather", "general"]
    # Two prompts per specialist, each to its own; both off-topic prompts to general.
    assert out["confusion"]["counts"] == [[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0],
                                          [0, 0, 0, 2]]
    assert out["accuracy"] == 1.0
    assert out["instances"]["general"] == {"precision": 1.0, "recall": 1.0, "support": 2}
    assert out["fallback_rate"] == {"below_threshold": 0.125, "no_user_text": 0.125}
    assert out["decisions_per_second"] > 0
    page = (report / "index.html").read_text()
    assert "Confusion matrix" in page and "<td>general</td>" in page


def test_the_html_report_keeps_the_counts_and_intervals_the_cli_prints(
    tmp_path: Path, config_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config, data = write_inputs(tmp_path, config_text)
    report = tmp_path / "report"
    assert main(["eval", "--config", str(config), "--route", "r1", "--data", str(data),
                 "--folds", "0", "--report", str(report)]) == 0
    printed = re.findall(r"\((\d+/\d+), 95% CI ([\d.]+-[\d.]+%)\)", capsys.readouterr().out)
    assert len(printed) == 5  # accuracy, in-scope, out-of-scope, precision, top-1
    page = (report / "index.html").read_text()
    for count, interval in printed:
        assert f"<td>{count}</td><td>{interval}</td>" in page, (count, interval)
    assert "<th>95% interval</th>" in page


def test_eval_without_arguments_says_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval"]) == 2
    assert "--config" in capsys.readouterr().err


PROMPTS = [f"{lead} {topic}" for lead in (
    "please", "can you", "i need help to", "quickly", "tell me how to")
    for topic in (
    "write a sorting function in python", "debug my rust program", "bake sourdough bread",
    "make pasta sauce", "check if it will snow", "see the temperature tomorrow",
    "plan a trip to paris", "learn the guitar", "fix a javascript error", "roast a chicken")]


@pytest.mark.parametrize("aggregation", ["max_centroid", "max_local_centroid"])
async def test_batched_routing_decides_exactly_like_the_gateway(config_dict: dict[str, Any],
                                                                aggregation: str) -> None:
    # Margin and negatives on, so every rule of `decide` is exercised on both paths.
    plugin = config_dict["routes"][0]["plugins"]["ai-proxy-multi"]
    plugin["balancer"]["min_margin"] = 0.05
    plugin["balancer"]["aggregation"] = aggregation
    plugin["balancer"]["k"] = 2
    plugin["balancer"]["center"] = True
    plugin["instances"][0]["negative_examples"] = ["fix a javascript error"]
    assert len(PROMPTS) == 50
    async with router_for(load_data(config_dict, {}), "r1") as router:
        batch = await route_batch(router, PROMPTS)
        one_by_one = [(await router.route(prompt_input(p))).decision for p in PROMPTS]
    for got, want in zip(batch, one_by_one, strict=True):
        assert (got.pick, got.reason, got.cleared) == (want.pick, want.reason, want.cleared)
        assert [n for n, _ in got.ranking] == [n for n, _ in want.ranking]
        assert [s for _, s in got.ranking] == pytest.approx([s for _, s in want.ranking],
                                                            abs=1e-6)
    assert {d.reason for d in batch} >= {"matched", "below_threshold"}


async def test_evaluate_counts_top1_even_below_threshold(config_text: str) -> None:
    strict = config_text.replace("threshold: 0.3}", "threshold: 0.99}")
    items = [parse_item(x, "t") for x in LABELLED]
    async with router_for(load_text(strict), "r1") as router:
        result = await evaluate(router, items)
    # Only cooking, with its own threshold of 0.25, still matches (both its prompts).
    assert result.confusion().in_scope_accuracy() == pytest.approx(2 / 6)
    assert result.top1_accuracy() == 1.0
