from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tests.quality.conftest import LABELLED

from semproxy.cli import main
from semproxy.config.edit import ConfigEditError, add_examples, set_thresholds


def test_thresholds_are_set_in_place_keeping_comments(config_text: str) -> None:
    out = set_thresholds(config_text, "r1", 0.41, {"code": 0.5, "cooking": 0.2})
    assert "# keep this comment" in out and "# an explicit one" in out
    assert "balancer: {algorithm: semantic, threshold: 0.4100}" in out
    assert "threshold: 0.2000  # an explicit one" in out
    assert "          - name: code\n            threshold: 0.5000\n" in out
    data = yaml.safe_load(out)
    instances = data["routes"][0]["plugins"]["ai-proxy-multi"]["instances"]
    assert [i.get("threshold") for i in instances] == [0.5, 0.2, None, None]


def test_block_balancer_without_threshold_gets_one() -> None:
    text = ("routes:\n- id: r\n  plugins:\n    ai-proxy-multi:\n      balancer:\n"
            "        algorithm: semantic\n      instances:\n      - {name: a, examples: [x]}\n")
    out = set_thresholds(text, "r", 0.3, {"a": 0.35})
    assert "      balancer:\n        threshold: 0.3000\n        algorithm: semantic\n" in out
    assert "- {name: a, examples: [x], threshold: 0.3500}" in out


def test_json_config_is_edited_as_json() -> None:
    doc = {"routes": [{"id": "r", "plugins": {"ai-proxy-multi": {
        "balancer": {"algorithm": "semantic"}, "instances": [{"name": "a"}]}}}]}
    out = set_thresholds(json.dumps(doc, indent=2), "r", 0.3, {"a": 0.25})
    multi = json.loads(out)["routes"][0]["plugins"]["ai-proxy-multi"]
    assert multi["balancer"]["threshold"] == 0.3 and multi["instances"][0]["threshold"] == 0.25


def test_unknown_route_is_an_error(config_text: str) -> None:
    with pytest.raises(ConfigEditError, match="nope"):
        set_thresholds(config_text, "nope", 0.3, {})


def test_calibrate_cli_writes_a_config_that_keeps_comments(
    tmp_path: Path, config_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "route.yaml"
    config.write_text(config_text)
    data = tmp_path / "data.jsonl"
    off_topic = [{"prompt": p, "instance": None} for p in (
        "who painted the mona lisa", "the history of rome", "best football team ever")]
    data.write_text("\n".join(json.dumps(x) for x in [*LABELLED, *off_topic]))
    out = tmp_path / "calibrated.yaml"
    # The config's own thresholds route these prompts perfectly and the fitted one does
    # worse by cross-validation, so only --allow-worse writes it (tests/quality/
    # test_calibrate_write.py has the default).
    code = main(["calibrate", "--config", str(config), "--route", "r1", "--data", str(data),
                 "--folds", "2", "--write", str(out), "--allow-worse"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "before (config)" in printed and "balancer threshold" in printed
    written = out.read_text()
    assert "# keep this comment" in written and "# an explicit one" in written
    multi = yaml.safe_load(written)["routes"][0]["plugins"]["ai-proxy-multi"]
    # Without --per-instance, cooking's explicit threshold follows the new balancer one.
    assert multi["instances"][1]["threshold"] == multi["balancer"]["threshold"]


def test_examples_are_appended_keeping_comments_and_quoting_what_needs_it(
    config_text: str,
) -> None:
    out = add_examples(config_text, "r1", {"code": ["refactor: this class", "plain words"],
                                          "general": ["hello there"]})
    assert "# keep this comment" in out and "# an explicit one" in out
    assert "              - 'refactor: this class'\n              - plain words\n" in out
    instances = yaml.safe_load(out)["routes"][0]["plugins"]["ai-proxy-multi"]["instances"]
    assert instances[0]["examples"][-2:] == ["refactor: this class", "plain words"]
    assert instances[3]["examples"] == ["hello there"]  # the key did not exist


def test_examples_are_appended_to_json_and_flow_lists(config_text: str) -> None:
    as_json = json.dumps(yaml.safe_load(config_text), indent=2)
    out = add_examples(as_json, "r1", {"weather": ['say "rain"']})
    assert json.loads(out)["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][2][
        "examples"][-1] == 'say "rain"'
    flow = config_text.replace("examples:\n              - will it rain tomorrow\n"
                               "              - what is the weather forecast for the weekend",
                               "examples: [will it rain tomorrow]")
    out = add_examples(flow, "r1", {"weather": ["snow?"]})
    assert "examples: [will it rain tomorrow, \"snow?\"]" in out


def test_adding_examples_to_an_unknown_instance_writes_nothing(config_text: str) -> None:
    with pytest.raises(ConfigEditError, match="no instance nope"):
        add_examples(config_text, "r1", {"nope": ["x"]})
