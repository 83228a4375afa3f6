"""Mistral's API (OpenAI wire format for chat and embeddings; no legacy text completions)."""

from types import MappingProxyType

from semproxy.providers.base import Provider


class MistralProvider(Provider):
    name = "mistral"
    base_url = "https://api.mistral.ai"
    paths = MappingProxyType({"chat": "/v1/chat/completions", "embeddings": "/v1/embeddings"})
