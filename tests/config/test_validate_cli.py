"""`semproxy validate FILE`: every error with its path on a bad config, exit 0 on a good one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from tests.conftest import instance, route_config

SRC = Path(__file__).resolve().parents[2] / "src"


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("MISSING_KEY", None)
    return subprocess.run([sys.executable, "-m", "semproxy", "validate", str(path)],
                          capture_output=True, text=True, env=env, timeout=30, check=False)


def write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_validate_exits_0_on_a_good_config(tmp_path: Path) -> None:
    result = validate(write(tmp_path, route_config([instance("a"), instance("b")])))
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout


def test_validate_prints_every_error_with_its_path_and_exits_1(tmp_path: Path) -> None:
    config = route_config([instance("a", weight=-1), instance("a"), instance("c", bogus=1)])
    result = validate(write(tmp_path, config))
    assert result.returncode == 1
    out = result.stdout + result.stderr
    assert "routes[0].plugins.ai-proxy-multi.instances[0].weight" in out
    assert "routes[0].plugins.ai-proxy-multi.instances[2].bogus" in out
    assert "Traceback" not in out


def test_validate_reports_cross_field_errors_with_their_path(tmp_path: Path) -> None:
    config = route_config([instance("a"), instance("a"), instance("c", provider="nope")])
    result = validate(write(tmp_path, config))
    assert result.returncode == 1
    out = result.stdout + result.stderr
    assert "routes[0].plugins.ai-proxy-multi.instances[1].name" in out
    assert "routes[0].plugins.ai-proxy-multi.instances[2].provider" in out


def test_validate_names_a_missing_env_variable_and_its_path(tmp_path: Path) -> None:
    # A warning, not an error: checking a config in CI needs no secrets (`serve`
    # still refuses: tests/ops/test_offline_commands.py).
    config = route_config([instance("a", "http://127.0.0.1:9",
                                    auth={"header": {"Authorization": "Bearer ${MISSING_KEY}"}})])
    result = validate(write(tmp_path, config))
    assert result.returncode == 0
    assert "warning: routes[0].plugins.ai-proxy-multi.instances[0].auth.header.Authorization" \
        in result.stdout
    assert "MISSING_KEY" in result.stdout


def test_validate_rejects_an_unreadable_file_without_a_traceback(tmp_path: Path) -> None:
    result = validate(tmp_path / "absent.yaml")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr


def test_validate_warns_when_a_semantic_route_has_no_catchall(tmp_path: Path) -> None:
    config = route_config(
        [instance("first"), instance("code", examples=["write a python function"])],
        balancer={"algorithm": "semantic", "threshold": 0.4},  # no threshold: a warning too
        embeddings={"provider": "openai-compatible", "override": {"endpoint": "http://h:1"}})
    result = validate(write(tmp_path, config))
    assert result.returncode == 0, result.stderr
    assert ("warning: routes[0].plugins.ai-proxy-multi.instances: no instance is the catchall, "
            "so the first one (first) serves every prompt that clears no threshold"
            ) in result.stdout
    config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]["catchall"] = True
    result = validate(write(tmp_path, config))
    assert result.returncode == 0 and "warning" not in result.stdout
