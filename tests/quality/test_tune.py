"""`semproxy tune` on the local model: the proposal, its expected gain and the written config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from semproxy.cli import main
from semproxy.config.loader import load_data
from semproxy.embeddings.local import embed_with, load_model
from semproxy.quality.examples import Scoring, score_route
from semproxy.runtime.compile import router_for

# Prompts labelled for the quality route: some are far from every example of
# their own instance (a cooking prompt about knives, a weather prompt about
# pollen), and the UV-index ones go to cooking, so adding one as a weather
# example has something to fix.
TUNE_DATA = [
    {"prompt": "uv index this afternoon", "instance": "weather"},
    {"prompt": "what is the uv index this afternoon", "instance": "weather"},
    {"prompt": "uv index at noon today", "instance": "weather"},
    {"prompt": "how strong is the uv index this afternoon", "instance": "weather"},
    {"prompt": "write a python function that reverses a list", "instance": "code"},
    {"prompt": "the javascript code throws an error, fix the bug", "instance": "code"},
    {"prompt": "sharpen a chef knife for chopping onions", "instance": "cooking"},
    {"prompt": "which knife is best for chopping vegetables", "instance": "cooking"},
    {"prompt": "how to chop onions with a knife without tears", "instance": "cooking"},
    {"prompt": "a recipe for tomato soup with basil", "instance": "cooking"},
    {"prompt": "pollen count and allergy forecast today", "instance": "weather"},
    {"prompt": "is the pollen forecast high for allergy sufferers", "instance": "weather"},
    {"prompt": "will it rain on saturday", "instance": "weather"},
    {"prompt": "who won the football match", "instance": None},
]


@pytest.mark.parametrize("aggregation", ["max", "max_local_centroid"])
async def test_tune_scores_like_the_gateway_scorer(config_dict: dict[str, Any],
                                                   aggregation: str) -> None:
    multi = config_dict["routes"][0]["plugins"]["ai-proxy-multi"]
    multi["balancer"].update(aggregation=aggregation, center=True, k=2)
    prompts = [row["prompt"] for row in TUNE_DATA]
    async with router_for(load_data(config_dict), "r1") as router:
        expected, _ = await router.score_many(prompts)
    model = load_model()
    examples = [embed_with(model, list(i["examples"])) for i in multi["instances"]
                if i.get("examples")]
    got = score_route(examples, embed_with(model, prompts), Scoring(aggregation, 2, True))
    assert np.allclose(got, expected, atol=1e-5)


def test_tune_proposes_writes_and_estimates_by_cross_validation(
    tmp_path: Path, config_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "route.yaml"
    config.write_text(config_text)
    data = tmp_path / "labelled.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in TUNE_DATA) + "\n")
    out = tmp_path / "tuned.yaml"
    code = main(["tune", "--config", str(config), "--route", "r1", "--data", str(data),
                 "--count", "3", "--folds", "2", "--write", str(out)])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "proposed as examples" in printed and "2-fold cross-validation" in printed
    assert "95% CI" in printed
    written = out.read_text()
    assert "# keep this comment" in written and "# an explicit one" in written
    instances = yaml.safe_load(written)["routes"][0]["plugins"]["ai-proxy-multi"]["instances"]
    added = {i["name"]: i["examples"][2:] for i in instances if i.get("examples")}
    labelled = {row["prompt"]: row["instance"] for row in TUNE_DATA}
    proposed = [(name, text) for name, texts in added.items() for text in texts]
    assert 1 <= len(proposed) <= 3
    assert all(labelled[text] == name for name, text in proposed)  # each to its own instance
    load_data(yaml.safe_load(written))  # still a valid config


def test_tune_refuses_bad_arguments_in_words(tmp_path: Path, config_text: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "route.yaml"
    config.write_text(config_text)
    data = tmp_path / "labelled.jsonl"
    data.write_text(json.dumps({"prompt": "x", "instance": "nope"}) + "\n")
    args = ["tune", "--config", str(config), "--route", "r1", "--data", str(data)]
    assert main(args) == 2
    assert "instances not on the route: nope" in capsys.readouterr().err
    assert main([*args, "--count", "0"]) == 2
    assert "--count" in capsys.readouterr().err
    assert main([*args[:3], "--route", "missing", "--data", str(data)]) == 2
    assert "no semantic route" in capsys.readouterr().err
