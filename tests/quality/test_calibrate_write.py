"""`calibrate --write` (and the playground's proposal, which shares `propose`) writes
the row that measured best, never one that measures worse than the config's own
thresholds unless asked to with --allow-worse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from semproxy.cli import main
from semproxy.config.loader import load_file
from semproxy.quality import calibrate as cal
from semproxy.quality.labelled import load_jsonl
from semproxy.quality.tuning import (
    BEFORE,
    PER_INSTANCE,
    SINGLE,
    propose,
    score_all,
    thresholds_to_write,
)
from semproxy.runtime.compile import router_for

from .test_eval import LABELLED

COST = Path(__file__).parent / "data/cost_routing"
OFF_TOPIC = [{"prompt": p, "instance": None} for p in (
    "who painted the mona lisa", "the history of rome", "best football team ever")]


@pytest.fixture
def easy(tmp_path: Path, config_text: str) -> dict[str, Path]:
    """The quality route and prompts its own thresholds route perfectly; a threshold
    fitted on half of them does worse on the other half (91.7% balanced)."""
    config = tmp_path / "route.yaml"
    config.write_text(config_text)
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in [*LABELLED, *OFF_TOPIC]))
    return {"config": config, "data": data, "out": tmp_path / "calibrated.yaml"}


def calibrate(files: dict[str, Path], *flags: str) -> int:
    return main(["calibrate", "--config", str(files["config"]), "--route", "r1", "--data",
                 str(files["data"]), "--folds", "2", "--write", str(files["out"]), *flags])


def test_when_the_fit_measures_worse_the_config_is_written_unchanged(
    easy: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert calibrate(easy) == 0
    printed = capsys.readouterr()
    assert "best by the objective: before (config)" in printed.out
    assert "the config's own, unchanged" in printed.err
    assert easy["out"].read_text() == easy["config"].read_text()


def test_a_row_that_measures_worse_is_written_only_with_allow_worse(
    easy: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert calibrate(easy, "--per-instance") == 1
    assert "measures worse than the config's own thresholds" in capsys.readouterr().err
    assert not easy["out"].exists()
    assert calibrate(easy, "--per-instance", "--allow-worse") == 0
    assert "which measures worse" in capsys.readouterr().err
    assert easy["out"].read_text() != easy["config"].read_text()


def balancer_and_instances(path: Path) -> tuple[Any, dict[str, Any]]:
    multi = yaml.safe_load(path.read_text())["routes"][0]["plugins"]["ai-proxy-multi"]
    return multi["balancer"]["threshold"], {i["name"]: i.get("threshold")
                                            for i in multi["instances"]}


def test_the_best_row_is_written_when_it_is_the_per_instance_one(tmp_path: Path) -> None:
    # On the cost-routing set (212 prompts, 5 folds) the per-instance thresholds
    # measured 80.2% balanced, one threshold 74.0%, the config's own 71.0%.
    out = tmp_path / "calibrated.yaml"
    assert main(["calibrate", "--config", str(COST / "config.yaml"), "--route", "cost",
                 "--data", str(COST / "prompts.jsonl"), "--write", str(out)]) == 0
    _, instances = balancer_and_instances(out)
    assert instances["strong"] is not None and instances["cheap"] is not None
    assert instances["strong"] != instances["cheap"]


async def test_the_proposal_the_playground_offers_is_the_best_row() -> None:
    config = load_file(COST / "config.yaml")
    items = load_jsonl(COST / "prompts.jsonl")
    async with router_for(config, "cost") as router:
        scored = await score_all(router, items)
        found = propose(router, scored, [i.text for i in items], cal.objective("balanced"))
    assert found.chosen == PER_INSTANCE
    assert found.scores[PER_INSTANCE] > found.scores[SINGLE] > found.scores[BEFORE]
    # What the playground computes from the proposal, without asking for per-instance:
    offered = thresholds_to_write(config.routes[0], found.fitted, router.names, False)
    assert offered == dict(zip(router.names, found.fits[PER_INSTANCE].thresholds, strict=True))
