"""Each named provider resolves its public default URL; embeddings only where declared.

Pure unit tests: `target()` is computed at config load and touches no network.
"""

from __future__ import annotations

import pytest

from semproxy.config.schema import Auth
from semproxy.providers.registry import PROVIDERS, embedding_provider_names
from semproxy.transport.target import NetPolicy

NET = NetPolicy()

DEFAULT_CHAT_URLS = {
    "openai": "https://api.openai.com/v1/chat/completions",
    "deepseek": "https://api.deepseek.com/chat/completions",
    "openrouter": "https://openrouter.ai/api/v1/chat/completions",
    "mistral": "https://api.mistral.ai/v1/chat/completions",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
    "anthropic": "https://api.anthropic.com/v1/chat/completions",
}

DEFAULT_EMBEDDING_URLS = {
    "openai": "https://api.openai.com/v1/embeddings",
    "openrouter": "https://openrouter.ai/api/v1/embeddings",
    "mistral": "https://api.mistral.ai/v1/embeddings",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai/embeddings",
}


@pytest.mark.parametrize(("name", "url"), sorted(DEFAULT_CHAT_URLS.items()))
def test_named_provider_resolves_its_public_chat_url(name: str, url: str) -> None:
    provider = PROVIDERS[name](instance="x")
    assert not provider.needs_endpoint()
    assert provider.target(None, Auth(), "m", NET).url == url


@pytest.mark.parametrize("name", sorted(DEFAULT_CHAT_URLS))
def test_named_provider_has_embeddings_exactly_when_declared(name: str) -> None:
    cls = PROVIDERS[name]
    assert cls.has_embeddings() is (name in DEFAULT_EMBEDDING_URLS)
    assert (name in embedding_provider_names()) is (name in DEFAULT_EMBEDDING_URLS)


@pytest.mark.parametrize(("name", "url"), sorted(DEFAULT_EMBEDDING_URLS.items()))
def test_named_provider_resolves_its_public_embeddings_url(name: str, url: str) -> None:
    provider = PROVIDERS[name](instance="x")
    assert provider.embeddings_target(None, Auth(), "e", NET).url == url  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["openai-compatible", "azure-openai"])
def test_providers_without_a_public_host_need_an_endpoint(name: str) -> None:
    assert PROVIDERS[name].needs_endpoint()


def test_endpoint_override_replaces_the_default_host_but_keeps_the_path() -> None:
    provider = PROVIDERS["openai"](instance="x")
    target = provider.target("http://10.0.0.5:8000/", Auth(), None, NET)
    assert target.url == "http://10.0.0.5:8000/v1/chat/completions"


def test_endpoint_with_a_path_is_used_as_given() -> None:
    provider = PROVIDERS["openai-compatible"](instance="x")
    target = provider.target("http://h:1/custom/chat", Auth(), None, NET)
    assert target.url == "http://h:1/custom/chat"


def test_query_auth_never_reaches_the_loggable_label() -> None:
    provider = PROVIDERS["gemini"](instance="x")
    target = provider.target(None, Auth(query={"key": "AIza-SECRET"}), None, NET)
    assert target.url.endswith("?key=AIza-SECRET")
    assert "SECRET" not in target.label


def test_azure_host_only_endpoint_gets_the_deployment_path_and_api_version() -> None:
    provider = PROVIDERS["azure-openai"](instance="x")
    target = provider.target("https://res.openai.azure.com", Auth(), "gpt4o", NET)
    assert target.url == ("https://res.openai.azure.com/openai/deployments/gpt4o/"
                          "chat/completions?api-version=2024-10-21")
