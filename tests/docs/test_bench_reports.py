"""The committed benchmark reports read the same on any machine: no paths of the
machine that ran them, and the measured commit named in one short line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ["bench/results.md", "bench/fault_results.md", "bench/instructions.md"]
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|tmp|home|root|Users|opt|var)/")


@pytest.mark.parametrize("report", REPORTS)
def test_a_report_names_no_machine_paths(report: str) -> None:
    text = (ROOT / report).read_text(encoding="utf-8")
    assert MACHINE_PATH.findall(text) == []


@pytest.mark.parametrize("report", REPORTS)
def test_the_command_and_source_lines_are_short(report: str) -> None:
    lines = (ROOT / report).read_text(encoding="utf-8").splitlines()
    head = [line for line in lines if line.startswith(("- Gateway source", "bash bench/"))]
    assert all(len(line) <= 160 for line in head), head
