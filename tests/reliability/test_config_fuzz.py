"""Generated config documents: loading one either works or raises ConfigError, and
`semproxy validate` answers 0 or 1 with messages, never a traceback."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semproxy.cli import main
from semproxy.config.loader import load_data, load_text
from semproxy.errors import ConfigError

from .conftest import semantic_route
from .process import ROOT

KEYS = ["listen", "admin", "routes", "consumers", "shutdown_grace", "client_body_timeout",
        "id", "uri", "methods", "plugins", "ai-proxy-multi", "ai-proxy", "key-auth",
        "instances", "name", "provider", "weight", "priority", "auth", "header", "options",
        "override", "endpoint", "checks", "active", "passive", "examples", "threshold",
        "catchall", "balancer", "algorithm", "embeddings", "model", "timeout", "key",
        "username", "fallback_strategy", "max_retries", "max_req_body_size", "hash_on"]
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats()
           | st.sampled_from(["echo", "local", "semantic", "openai", "/v1/x", "http://h",
                              "${NOPE}", "${X:-1}", "POST", "", "127.0.0.1:0", "a" * 300])
           | st.text(max_size=20))
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=6),
    max_leaves=40,
)
VALID: dict[str, Any] = {"listen": "127.0.0.1:0", "routes": [semantic_route()]}
FUZZ = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += paths(value, (*at, i))
    return found


def replaced(doc: Any, at: tuple[Any, ...], value: Any) -> Any:
    if not at:
        return value
    copy = orjson.loads(orjson.dumps(doc))
    node = copy
    for step in at[:-1]:
        node = node[step]
    node[at[-1]] = value
    return copy


def loads_or_config_error(doc: Any) -> None:
    with contextlib.suppress(ConfigError):
        load_data(doc, {})


@FUZZ
@given(doc=documents)
def test_a_random_document_loads_or_raises_config_error(doc: Any) -> None:
    loads_or_config_error(doc)


@FUZZ
@given(data=st.data(), value=documents)
def test_a_valid_document_with_one_field_replaced_loads_or_raises_config_error(
    data: st.DataObject, value: Any
) -> None:
    at = data.draw(st.sampled_from(paths(VALID)))
    loads_or_config_error(replaced(VALID, at, value))


@FUZZ
@given(text=st.text(max_size=200) | st.sampled_from(
    ["[" * 1200, "{a: " * 1200, "- " * 1200, "&a [*a]", "!!python/object:os.system x",
     "a: !!binary Zm9v", "? [a]\n: b", "\t", "%YAML 9.9\n---\n"]))
def test_random_text_loads_or_raises_config_error(text: str) -> None:
    with contextlib.suppress(ConfigError):
        load_text(text)


def validate(path: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--log-format", "text", "validate", str(path)])
    return code, out.getvalue() + err.getvalue()


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=documents)
def test_validate_answers_0_or_1_for_any_document(tmp_path: Path, doc: Any) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, output = validate(path)
    assert code in (0, 1)
    assert "Traceback" not in output


@pytest.mark.parametrize("content", [
    b"\xff\xfe not utf-8", b"[" * 100_000, b"routes: [" + b"{a: " * 2000, b"\x00\x01\x02",
    orjson.dumps(VALID), b"routes: 5",
])
def test_validate_in_a_real_process_never_prints_a_traceback(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(content)
    done = subprocess.run([sys.executable, "-m", "semproxy", "validate", str(path)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
