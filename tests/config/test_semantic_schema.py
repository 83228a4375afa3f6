"""Semantic routing config: every mistake is rejected at load, naming its field path."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import instance, route_config

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError

P = "routes[0].plugins.ai-proxy-multi"
EMBEDDINGS = {"provider": "openai-compatible", "override": {"endpoint": "http://127.0.0.1:9"}}


def semantic(instances: list[dict[str, Any]], embeddings: dict[str, Any] | None = EMBEDDINGS,
             **balancer: Any) -> dict[str, Any]:
    extra = {} if embeddings is None else {"embeddings": embeddings}
    return route_config(instances, balancer={"algorithm": "semantic", **balancer}, **extra)


def error_paths(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_data(config, env={})
    return [line.split(": ", 1)[0] for line in info.value.errors]


CODE = instance("code", examples=["write a python function"])

INVALID = {
    "semantic_without_embeddings": (
        semantic([CODE], embeddings=None), f"{P}.embeddings"),
    "no_instance_has_examples": (
        semantic([instance("a"), instance("b")]), f"{P}.instances"),
    "empty_examples_list": (
        semantic([instance("a", examples=[])]), f"{P}.instances[0].examples"),
    "blank_example": (
        semantic([instance("a", examples=["fine", "  "])]), f"{P}.instances[0].examples[1]"),
    "65_examples": (
        semantic([instance("a", examples=[f"example {i}" for i in range(65)])]),
        f"{P}.instances[0].examples"),
    "two_catchalls": (
        semantic([instance("a", catchall=True), instance("b", catchall=True), CODE]),
        f"{P}.instances[1].catchall"),
    "catchall_with_examples": (
        semantic([instance("a", catchall=True, examples=["hello"]), CODE]),
        f"{P}.instances[0].examples"),
    "balancer_threshold_above_1": (
        semantic([CODE], threshold=1.5), f"{P}.balancer.threshold"),
    "background_weight_negative": (
        semantic([CODE], background_weight=-0.5), f"{P}.balancer.background_weight"),
    "balancer_threshold_a_word_other_than_auto": (
        semantic([CODE], threshold="sometimes"), f"{P}.balancer.threshold"),
    "instance_threshold_above_1": (
        semantic([instance("code", examples=["x"], threshold=1.5)]),
        f"{P}.instances[0].threshold"),
    "unknown_embeddings_provider": (
        semantic([CODE], embeddings={"provider": "word2vec"}), f"{P}.embeddings.provider"),
    "deepseek_has_no_embeddings": (
        semantic([CODE], embeddings={"provider": "deepseek"}), f"{P}.embeddings.provider"),
    "anthropic_has_no_embeddings": (
        semantic([CODE], embeddings={"provider": "anthropic"}), f"{P}.embeddings.provider"),
}


@pytest.mark.parametrize(("config", "path"), INVALID.values(), ids=INVALID.keys())
def test_invalid_semantic_config_is_rejected_at_its_field_path(
    config: dict[str, Any], path: str
) -> None:
    assert error_paths(config) == [path]


def test_semantic_opts_threshold_above_1_is_rejected() -> None:
    config = route_config([CODE], balancer={"algorithm": "semantic"},
                          semantic_opts={"threshold": 1.5, "embeddings": EMBEDDINGS})
    assert error_paths(config) == [f"{P}.semantic_opts.threshold"]


def test_unknown_provider_error_lists_the_providers_that_can_embed() -> None:
    with pytest.raises(ConfigError) as info:
        load_data(semantic([CODE], embeddings={"provider": "deepseek"}), env={})
    message = info.value.errors[0]
    assert "deepseek" in message and "local" in message and "openai-compatible" in message


def test_examples_on_a_roundrobin_route_load_with_a_warning() -> None:
    config = load_data(route_config([CODE, instance("b")]), env={})
    assert config.routes[0].semantic is None
    assert len(config.warnings) == 1
    assert config.warnings[0].startswith(P) and "ignored" in config.warnings[0]


def test_a_valid_semantic_config_loads_without_warnings() -> None:
    config = load_data(semantic([instance("default", catchall=True), CODE], threshold=0.5),
                       env={})
    spec = config.routes[0].semantic
    assert spec is not None and spec.catchall == "default" and spec.threshold == 0.5
    assert config.warnings == ()


def test_balancer_threshold_auto_leaves_instance_thresholds_to_be_learned() -> None:
    config = load_data(semantic([CODE, instance("tr", examples=["translate"], threshold=0.3)],
                                threshold="auto"), env={})
    spec = config.routes[0].semantic
    assert spec is not None and spec.auto_threshold and spec.threshold == 0.0
    assert [i.threshold for i in config.routes[0].instances] == [None, 0.3]


def test_without_a_marked_catchall_the_first_instance_is_it_with_a_warning() -> None:
    config = load_data(semantic([instance("default"), CODE], threshold=0.5), env={})
    spec = config.routes[0].semantic
    assert spec is not None and spec.catchall == "default"
    assert len(config.warnings) == 1 and "no instance is the catchall" in config.warnings[0]
