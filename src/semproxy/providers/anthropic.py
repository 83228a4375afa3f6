"""Anthropic through its OpenAI SDK compatibility endpoint (chat only)."""

from semproxy.providers.base import OpenAIStyleProvider


class AnthropicProvider(OpenAIStyleProvider):
    name = "anthropic"
    base_url = "https://api.anthropic.com"
    chat_path = "/v1/chat/completions"
    embeddings_path = None
