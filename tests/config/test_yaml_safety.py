"""Hostile YAML: alias bombs are refused at once, and errors never quote the text."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from semproxy.config.loader import MAX_EXPANDED_VALUES, load_text, parse_document
from semproxy.errors import ConfigError

from .test_validate_cli import validate


def billion_laughs() -> str:
    """Nine levels of nine aliases each: under 400 bytes, 9**9 strings once expanded."""
    text = "a: &a [" + ",".join(['"lol"'] * 9) + "]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    return text + "routes: *i\n"


def test_an_alias_bomb_is_refused_quickly_with_a_clear_message() -> None:
    text = billion_laughs()
    assert len(text) < 450
    started = time.monotonic()
    with pytest.raises(ConfigError) as err:
        load_text(text)
    assert time.monotonic() - started < 5  # unguarded: about a minute and gigabytes
    assert err.value.errors == [f"<root>: YAML aliases expand to more than "
                                f"{MAX_EXPANDED_VALUES:,} values; write the values out"]


def test_validate_refuses_an_alias_bomb(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs())
    result = validate(path)  # 30 s timeout; unguarded it takes far longer
    assert result.returncode == 1
    assert "YAML aliases expand to more than" in result.stdout + result.stderr


def test_ordinary_aliases_still_work() -> None:
    text = ("defaults: &inst {provider: echo, weight: 1}\n"
            "routes: [{id: r, uri: /v1/chat/completions, plugins: {ai-proxy-multi: "
            "{instances: [{<<: *inst, name: a}, {<<: *inst, name: b}]}}}]\n"
            "listen: 127.0.0.1:0\n")
    doc = parse_document(text.replace("defaults:", "x-defaults:"))
    assert [i["name"] for i in doc["routes"][0]["plugins"]["ai-proxy-multi"]["instances"]] \
        == ["a", "b"]


@pytest.mark.parametrize("text", [
    "admin:\n  key: s3cret-admin-value\n  listen: [unclosed\n",
    "admin: {key: s3cret-admin-value, listen: \"127.0.0.1:9180\"\n",
    "admin:\n  key: s3cret-admin-value\n\tlisten: x\n",
])
def test_a_yaml_error_gives_the_position_but_never_the_text(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_document(text, "gw.yaml")
    message = err.value.errors[0]
    assert message.startswith("gw.yaml: not valid YAML: ")
    assert " at line " in message
    assert "s3cret" not in message and "key" not in message


def test_a_json_error_gives_the_position_but_never_the_text() -> None:
    with pytest.raises(ConfigError) as err:
        parse_document('{"admin": {"key": "s3cret-admin-value" "x"}}', "gw.json")
    assert "s3cret" not in err.value.errors[0]
    assert "line 1" in err.value.errors[0]

