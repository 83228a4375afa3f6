"""The command line: every ordinary mistake is one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import orjson
import pytest
import yaml
from tests.conftest import instance, route_config

from semproxy.cli import parser

from .conftest import run_cli

QUICKSTART = str(Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text('{"prompt": "write a python function", "instance": "code"}\n')
    roundrobin = tmp_path / "rr.yaml"
    roundrobin.write_text(yaml.safe_dump(route_config([instance("echo")])))
    return {"data": str(labelled), "rr": str(roundrobin)}


MISTAKES = {
    "explain_unknown_route": ["explain", "--config", QUICKSTART, "--route", "nope", "hi"],
    "eval_unknown_route": ["eval", "--config", QUICKSTART, "--route", "nope", "--data", "{data}"],
    "calibrate_unknown_route": ["calibrate", "--config", QUICKSTART, "--route", "nope",
                                "--data", "{data}"],
    "explain_roundrobin_route": ["explain", "--config", "{rr}", "--route", "r1", "hi"],
    "eval_missing_data": ["eval", "--config", QUICKSTART, "--route", "auto", "--data", "/nope"],
    "eval_missing_clinc150": ["eval", "--clinc150", "/nonexistent/data_full.json"],
    "eval_clinc150_not_json": ["eval", "--clinc150", QUICKSTART],
    "calibrate_unknown_objective": ["calibrate", "--config", QUICKSTART, "--route", "auto",
                                    "--data", "{data}", "--objective", "loudest"],
    "calibrate_recall_above_one": ["calibrate", "--config", QUICKSTART, "--route", "auto",
                                   "--data", "{data}", "--objective", "oos_recall=45"],
    "calibrate_too_few_folds": ["calibrate", "--config", QUICKSTART, "--route", "auto",
                                "--data", "{data}", "--folds", "1"],
    "serve_without_source": ["serve"],
    "serve_zero_workers": ["serve", "--config", QUICKSTART, "--workers", "0"],
    "serve_bad_listen": ["serve", "--config", QUICKSTART, "--listen", "localhost:99999"],
    "unknown_log_level": ["--log-level", "LOUD", "validate", QUICKSTART],
    "no_command": [],
    "unknown_flag": ["validate", "--frobnicate", QUICKSTART],
}


@pytest.mark.parametrize("argv", MISTAKES.values(), ids=MISTAKES.keys())
def test_a_mistake_is_one_line_and_exit_code_2(argv: list[str], files: dict[str, str]) -> None:
    done = run_cli(*(a.format(**files) for a in argv))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("semproxy"), done.stderr


def test_version_prints_the_package_version() -> None:
    done = run_cli("--version")
    assert done.returncode == 0
    assert done.stdout.startswith("semproxy ") and done.stdout.split()[1][0].isdigit()


def actions(p: argparse.ArgumentParser, where: str = "semproxy") -> list[tuple[str, str | None]]:
    found = []
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += actions(sub, f"{where} {name}")
        elif not isinstance(action, argparse._HelpAction):
            found.append((f"{where} {action.dest}", action.help))
    return found


def test_every_flag_and_argument_has_help_text() -> None:
    every = actions(parser())
    assert len(every) > 30
    assert [name for name, text in every if not text] == []


def test_validate_counts_one_route_in_the_singular() -> None:
    done = run_cli("validate", QUICKSTART)
    assert done.returncode == 0 and "(1 route," in done.stdout


def official_clinc150(path: Path) -> None:
    """A few rows in the layout of CLINC150's own data_full.json (no domain field)."""
    rows = {
        "train": [["what is my balance", "balance"], ["show my account balance", "balance"],
                  ["book a flight to paris", "book_flight"], ["find me a flight", "book_flight"]],
        "val": [["how much money do i have", "balance"], ["get me a plane ticket", "book_flight"]],
        "test": [["balance please", "balance"]],
        "oos_train": [["how tall is a giraffe", "oos"]],
        "oos_val": [["who won the cup", "oos"]],
        "oos_test": [["sing a song", "oos"]],
    }
    path.write_bytes(orjson.dumps(rows))


def test_eval_reads_the_official_clinc150_layout(tmp_path: Path) -> None:
    source = tmp_path / "data_full.json"
    official_clinc150(source)
    done = run_cli("eval", "--clinc150", str(source), "--k", "2", "--out", str(tmp_path / "out"),
                   "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["prompts"] == 3
    config = yaml.safe_load((tmp_path / "out" / "clinc150-k2.yaml").read_text())
    instances = config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"]
    assert {"banking", "travel"} <= {i["name"] for i in instances}


def test_calibrate_warns_when_its_figures_rest_on_few_prompts(tmp_path: Path) -> None:
    data = tmp_path / "few.jsonl"
    rows = [("write a python function", "code"), ("fix the bug in my code", "code"),
            ("translate this into german", "translate"), ("summarize this text", "translate"),
            ("what is the weather", None), ("tell me a joke", None)] * 2
    data.write_text("".join(orjson.dumps({"prompt": p, "instance": i}).decode() + "\n"
                            for p, i in rows))
    done = run_cli("calibrate", "--config", QUICKSTART, "--route", "auto", "--data", str(data),
                   timeout=60)
    assert done.returncode == 0, done.stderr
    assert "warning: only 4 out-of-scope prompts" in done.stdout
    assert re.search(r"in-scope accuracy +100.0% \(8/8, 95% CI", done.stdout)


def labelled(path: Path, rows: list[tuple[str, str | None]]) -> str:
    path.write_text("".join(orjson.dumps({"prompt": p, "instance": i}).decode() + "\n"
                            for p, i in rows))
    return str(path)


def confusion_lines(out: str) -> list[str]:
    lines = out.splitlines()
    start = lines.index("confusion (rows: expected, columns: picked)")
    return lines[start + 1:start + 5]


def test_the_confusion_matrix_shows_whole_instance_names(tmp_path: Path) -> None:
    data = labelled(tmp_path / "d.jsonl", [("write a python function", "code"),
                                           ("translate this into german", "translate"),
                                           ("what is the weather", None)])
    done = run_cli("eval", "--config", QUICKSTART, "--route", "auto", "--data", data, timeout=60)
    assert done.returncode == 0, done.stderr
    head, *rows = confusion_lines(done.stdout)
    assert head.split() == ["code", "translate", "default"]
    assert [r.split()[0] for r in rows] == ["code", "translate", "default"]


def test_long_instance_names_get_numbered_columns_and_stay_whole(tmp_path: Path) -> None:
    names = ["kitchen_and_dining", "auto_and_commute"]
    config = route_config([instance(n, examples=[f"{n.replace('_', ' ')} question"])
                           for n in names] + [instance("out_of_scope", catchall=True)])
    config["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"] = {
        "algorithm": "semantic", "threshold": 0.3}
    config["routes"][0]["plugins"]["ai-proxy-multi"]["embeddings"] = {"provider": "local"}
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(config))
    data = labelled(tmp_path / "d.jsonl", [("kitchen and dining question", names[0]),
                                           ("auto and commute question", names[1])])
    done = run_cli("eval", "--config", str(path), "--route", "r1", "--data", data, timeout=60)
    assert done.returncode == 0, done.stderr
    head, *rows = confusion_lines(done.stdout)
    assert head.split() == ["#1", "#2", "#3"]
    assert [r.split()[:2] for r in rows] == [["#1", names[0]], ["#2", names[1]],
                                             ["#3", "out_of_scope"]]
