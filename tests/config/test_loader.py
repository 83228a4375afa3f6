"""Config loading: files, ${VAR} substitution, and errors that name their field path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import instance, route_config

from semproxy.config.loader import load_data, load_file
from semproxy.errors import ConfigError

INSTANCES = "routes[0].plugins.ai-proxy-multi.instances"


def two_echoes() -> dict[str, Any]:
    return route_config([instance("a"), instance("b")])


def with_instance_field(index: int, field: str, value: Any) -> dict[str, Any]:
    config = two_echoes()
    config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][index][field] = value
    return config


def errors_of(config: dict[str, Any], env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_data(config, env or {})
    return info.value.errors


def secret_config() -> dict[str, Any]:
    config = route_config([instance("a"), instance("b", "http://127.0.0.1:9")])
    config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][1]["auth"] = {
        "header": {"Authorization": "Bearer ${OPENAI_KEY}"}}
    return config


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_yaml_and_json_files_both_load(tmp_path: Path, suffix: str) -> None:
    config = two_echoes()
    text = yaml.safe_dump(config) if suffix == ".yaml" else json.dumps(config)
    path = tmp_path / f"gateway{suffix}"
    path.write_text(text)
    loaded = load_file(path, {})
    assert [i.name for i in loaded.routes[0].instances] == ["a", "b"]


def test_env_variable_is_substituted_into_a_string() -> None:
    loaded = load_data(secret_config(), {"OPENAI_KEY": "sk-123"})
    target = loaded.routes[0].instances[1].target
    assert target.headers["Authorization"] == "Bearer sk-123"


def test_missing_env_variable_names_the_variable_and_the_field_path() -> None:
    (error,) = errors_of(secret_config())
    assert "OPENAI_KEY" in error
    assert error.startswith(f"{INSTANCES}[1].auth.header.Authorization:")


def test_unknown_field_is_rejected_with_its_path() -> None:
    (error,) = errors_of(with_instance_field(0, "bogus", 1))
    assert error.startswith(f"{INSTANCES}[0].bogus:")


def test_duplicate_instance_names_are_rejected() -> None:
    (error,) = errors_of(with_instance_field(1, "name", "a"))
    assert error.startswith(f"{INSTANCES}[1].name:")
    assert "duplicate" in error


def test_negative_weight_is_rejected() -> None:
    (error,) = errors_of(with_instance_field(1, "weight", -1))
    assert error.startswith(f"{INSTANCES}[1].weight:")


@pytest.mark.parametrize("weight", ["3", 1.5, None])
def test_weight_must_be_an_integer(weight: Any) -> None:
    (error,) = errors_of(with_instance_field(0, "weight", weight))
    assert error.startswith(f"{INSTANCES}[0].weight:")


def test_unknown_provider_is_rejected_and_known_ones_listed() -> None:
    (error,) = errors_of(with_instance_field(1, "provider", "skynet"))
    assert error.startswith(f"{INSTANCES}[1].provider:")
    assert "skynet" in error and "openai-compatible" in error


def test_openai_compatible_without_endpoint_is_rejected() -> None:
    (error,) = errors_of(with_instance_field(0, "provider", "openai-compatible"))
    assert error.startswith(f"{INSTANCES}[0].override.endpoint:")


def test_chash_without_key_is_rejected() -> None:
    config = two_echoes()
    config["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"] = {
        "algorithm": "chash", "hash_on": "header"}
    (error,) = errors_of(config)
    assert error.startswith("routes[0].plugins.ai-proxy-multi.balancer.key:")


@pytest.mark.parametrize("name", ["a\n", "a\r", "a\r\nX-Injected: 1", "two words", ""])
def test_instance_name_with_line_breaks_or_spaces_is_rejected(name: str) -> None:
    (error,) = errors_of(with_instance_field(1, "name", name))
    assert error.startswith(f"{INSTANCES}[1].name:")


def test_every_error_is_reported_not_only_the_first() -> None:
    config = with_instance_field(0, "bogus", 1)
    config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][1]["weight"] = -2
    errors = errors_of(config)
    assert {e.split(":")[0] for e in errors} == {
        f"{INSTANCES}[0].bogus", f"{INSTANCES}[1].weight"}


def test_timeout_defaults_to_30000_ms() -> None:
    loaded = load_data(two_echoes(), {})
    assert {i.target.net.timeout_s for i in loaded.routes[0].instances} == {30.0}


def test_route_timeout_in_ms_reaches_every_instance() -> None:
    loaded = load_data(route_config([instance("a"), instance("b")], timeout=1500), {})
    assert {i.target.net.timeout_s for i in loaded.routes[0].instances} == {1.5}


def single_proxy(**plugin: Any) -> dict[str, Any]:
    return {"routes": [{"id": "r", "uri": "/v1/chat/completions",
                        "plugins": {"ai-proxy": plugin}}]}


def test_ai_proxy_single_instance_plugin_builds_one_instance() -> None:
    loaded = load_data(single_proxy(provider="openai", options={"model": "gpt-4o"}), {})
    (only,) = loaded.routes[0].instances
    assert only.target.url == "https://api.openai.com/v1/chat/completions"
    assert only.options["model"] == "gpt-4o"


def test_ai_proxy_errors_use_the_plugin_path_not_a_hidden_instance_list() -> None:
    (error,) = errors_of(single_proxy(provider="openai-compatible"))
    assert error.startswith("routes[0].plugins.ai-proxy.override.endpoint:")


def test_ai_proxy_unknown_field_is_rejected_with_its_path() -> None:
    (error,) = errors_of(single_proxy(provider="openai", bogus=True))
    assert error == "routes[0].plugins.ai-proxy.bogus: Extra inputs are not permitted"


def test_config_snapshot_is_not_changed_by_later_edits_of_the_source_dict() -> None:
    source = two_echoes()
    loaded = load_data(copy.deepcopy(source), {})
    source["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]["options"]["model"] = "x"
    assert loaded.routes[0].instances[0].options["model"] == "a-model"
