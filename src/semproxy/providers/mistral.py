"""Mistral's API (OpenAI wire format for chat and embeddings)."""

from semproxy.providers.base import Provider


class MistralProvider(Provider):
    name = "mistral"
    base_url = "https://api.mistral.ai"
