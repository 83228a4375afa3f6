"""The commands that call no upstream (validate, explain, eval, calibrate, tune) on the
README's config without its secrets: a warning, then the work; `serve` still refuses.
Their output is for a human: plain lines, each warning once, no JSON log records."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml

from .conftest import ROOT, cli_env

SECRETS = ("OPENAI_KEY", "MISTRAL_KEY", "EMBEDDING_KEY")
UNSET = "environment variable OPENAI_KEY is not set"


def readme_config() -> str:
    """The YAML block under the README's "A real config" heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## A real config"):]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found is not None
    return found.group(1)


def run(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    for name in SECRETS:
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "semproxy", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "semproxy.yaml"
    config.write_text(readme_config(), encoding="utf-8")
    rows = [("write a python function that parses json", "strong"),
            ("debug this segfault in my c program", "strong"),
            ("explain how quicksort works", "strong"),
            ("translate good night into german", "cheap"),
            ("summarize this article in three lines", "cheap"),
            ("translate this email into spanish", "cheap"),
            ("what should i name my cat", None), ("tell me a joke about dogs", None),
            ("who painted the mona lisa", None)] * 2
    data = tmp_path / "labelled.jsonl"
    data.write_text("".join(orjson.dumps({"prompt": p, "instance": i}).decode() + "\n"
                            for p, i in rows), encoding="utf-8")
    return {"config": str(config), "data": str(data)}


def test_validate_warns_about_an_unset_variable_and_passes(files: dict[str, str]) -> None:
    done = run("validate", files["config"])
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stdout.splitlines() if UNSET in line]
    assert warned and all(line.startswith("warning: routes[") for line in warned)
    assert "auth.header.Authorization" in warned[0]
    assert done.stderr == ""


@pytest.mark.parametrize("command", [
    ["explain", "--config", "{config}", "--route", "auto", "write a python function"],
    ["eval", "--config", "{config}", "--route", "auto", "--data", "{data}", "--folds", "2"],
    ["calibrate", "--config", "{config}", "--route", "auto", "--data", "{data}",
     "--folds", "2"],
    ["tune", "--config", "{config}", "--route", "auto", "--data", "{data}", "--count", "2",
     "--folds", "2"],
], ids=["explain", "eval", "calibrate", "tune"])
def test_the_tools_warn_about_an_unset_variable_and_do_their_work(
    command: list[str], files: dict[str, str]
) -> None:
    done = run(*(part.format(**files) for part in command))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    errors = done.stderr.splitlines()
    assert any(UNSET in line for line in errors)
    # Human output: plain warning lines (and eval's progress), never a JSON log record.
    assert not [line for line in errors if line.lstrip().startswith("{")], done.stderr


def test_the_readme_thresholds_are_the_ones_calibrate_measures(files: dict[str, str]) -> None:
    done = run("calibrate", "--config", files["config"], "--route", "auto", "--data",
               str(ROOT / "tests/quality/data/cost_routing/prompts.jsonl"), "--per-instance")
    assert done.returncode == 0, done.stderr
    fitted = dict(re.findall(r"^  (strong|cheap) +([\d.]+)$", done.stdout, re.M))
    multi = yaml.safe_load(readme_config())["routes"][0]["plugins"]["ai-proxy-multi"]
    written = {i["name"]: i.get("threshold") for i in multi["instances"]}
    assert {name: float(t) for name, t in fitted.items()} == \
        {"strong": written["strong"], "cheap": written["cheap"]}


def test_serve_still_refuses_a_config_with_an_unset_variable(files: dict[str, str]) -> None:
    done = run("serve", "--config", files["config"], "--listen", "127.0.0.1:0")
    assert done.returncode == 1
    assert UNSET in done.stderr and "Traceback" not in done.stderr


def test_explain_of_a_prompt_that_clears_nothing_writes_no_log_record(tmp_path: Path) -> None:
    config = tmp_path / "quick.yaml"
    config.write_text((ROOT / "examples" / "quickstart.yaml").read_text(encoding="utf-8"))
    done = run("explain", "--config", str(config), "--route", "auto",
               "what is the weather like today")
    assert done.returncode == 0, done.stderr
    assert "pick default (below_threshold)" in done.stdout
    assert done.stderr == ""  # the gateway's JSON warning was written here


def test_validate_prints_each_warning_once(tmp_path: Path) -> None:
    config = tmp_path / "nocatchall.yaml"
    config.write_text(
        "routes:\n  - id: r\n    uri: /v1/chat/completions\n    plugins:\n"
        "      ai-proxy-multi:\n        balancer: {algorithm: semantic}\n"
        "        embeddings: {provider: local}\n        instances:\n"
        "          - {name: first, provider: echo, weight: 1}\n"
        "          - {name: code, provider: echo, weight: 1, examples: [write code]}\n",
        encoding="utf-8")
    done = run("validate", str(config))
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert out.count("no instance is the catchall") == 1
    # No threshold anywhere: 0.0 clears nearly everything, so validate says so.
    assert out.count("balancer.threshold: not set, so it is 0.0") == 1
