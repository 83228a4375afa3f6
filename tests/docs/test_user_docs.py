"""What the README and the user docs say agrees with the code, the measurements and
each other, and speaks to users (no words from the project's own tracker)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
import yaml

from semproxy.cli import parser as build_parser
from semproxy.config.overlap import RouteUri, overlap_warnings

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*/*.md"))]


def read(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """From `heading` to the next heading of the same level."""
    level = heading.split(" ")[0]
    start = text.index(heading + "\n")
    end = text.find(f"\n{level} ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_do_not_speak_of_tracker_items(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = re.findall(r"\bissues? \d+|\bissue's\b|\(issue\b|议题|#\d+ part", text, re.I)
    assert found == []


def test_the_access_log_model_field_is_what_the_client_sent() -> None:
    en = section(read("docs/en/operations.md"), "### Access log")
    (row,) = [line for line in en.splitlines() if line.startswith("| `model` |")]
    assert "the client sent" in row and "when set" not in row
    (zh,) = [line for line in read("docs/zh/operations.md").splitlines()
             if line.startswith("| `model` |")]
    assert "客户端发送的" in zh


@pytest.mark.parametrize("page", ["docs/en/playground.md", "docs/zh/playground.md"])
def test_the_playground_limits_say_secrets_are_masked(page: str) -> None:
    text = read(page)
    assert "returned as they are" not in text and "原样返回" not in text
    assert "******" in section(text, "## Limits" if "/en/" in page else "## 限制")


def numbers(text: str) -> set[str]:
    return set(re.findall(r"\d+(?:[.,]\d+)*", text))


def test_the_readme_routing_quality_figures_are_those_of_routing_quality_md() -> None:
    readme = section(read("README.md"), "## Routing quality")
    quoted = readme[:readme.index("```")]  # the figures, not the commands
    measured = numbers(section(read("docs/en/routing-quality.md"), "## CLINC150 figures"))
    assert numbers(quoted) - measured == set()


def test_the_accurate_mode_ratios_agree_between_readme_and_accurate_mode() -> None:
    readme = read("README.md")
    row = re.search(r"^\| semantic, `model: accurate`, new prompts \| [\d,]+ \| ([\d.]+) \|",
                    readme, re.M)
    assert row is not None
    instructions = re.search(r"^\| semantic, `model: accurate`, a new prompt per request \|"
                             r"[^|]+\|[^|]+\|[^|]+\| ([\d.]+) / ([\d.]+) \|",
                             read("bench/instructions.md"), re.M)
    assert instructions is not None
    times = f"{(float(instructions[1]) + float(instructions[2])) / 2:.1f}"
    for page in ("README.md", "docs/en/accurate-mode.md", "docs/zh/accurate-mode.md"):
        text = read(page)
        assert row[1] in text and "0.13-0.14" in text and times in text, page


def test_the_readme_says_where_the_semproxy_command_is() -> None:
    quick = section(read("README.md"), "## Quick start")
    assert "source .venv/bin/activate" in quick and ".venv/bin/semproxy" in quick


@pytest.mark.parametrize("page", ["docs/en/accurate-mode.md", "docs/zh/accurate-mode.md",
                                  "docs/en/semantic-routing.md", "docs/zh/semantic-routing.md",
                                  "docs/en/routing-quality.md", "docs/zh/routing-quality.md"])
def test_extras_are_installed_with_the_environments_own_pip(page: str) -> None:
    text = read(page)
    assert re.findall(r"(?<![/\w])pip install '?semproxy\[", text) == []
    assert ".venv/bin/pip install -c constraints.txt -e '.[" in text


def test_the_readme_cli_block_lists_every_serve_option() -> None:
    block = section(read("README.md"), "## CLI")
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    serve = commands.choices["serve"]
    options = {o for a in serve._actions for o in a.option_strings if o.startswith("--")}
    assert {o for o in options - {"--help"} if o not in block} == set()


@pytest.mark.parametrize("page", ["docs/en/getting-started.md", "docs/zh/getting-started.md"])
def test_getting_started_says_where_the_semproxy_command_is(page: str) -> None:
    assert "source .venv/bin/activate" in read(page)


def configs_in(page: Path) -> list[dict[str, object]]:
    blocks = re.findall(r"```ya?ml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    found = []
    for block in blocks:
        try:
            doc = yaml.safe_load(block)
        except yaml.YAMLError:
            continue  # a fragment with placeholders, not a config
        if isinstance(doc, dict) and isinstance(doc.get("routes"), list):
            found.append(doc)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_config_in_the_docs_has_a_route_taking_paths_from_another(page: Path) -> None:
    for doc in configs_in(page):
        routes = [RouteUri(i, str(r.get("id")), r["uri"]) for i, r in enumerate(doc["routes"])
                  if isinstance(r, dict) and isinstance(r.get("uri"), str)]
        assert overlap_warnings(routes) == []
