"""Mistral's API (OpenAI wire format for chat and embeddings)."""

from semproxy.providers.base import OpenAIStyleProvider


class MistralProvider(OpenAIStyleProvider):
    name = "mistral"
    base_url = "https://api.mistral.ai"
