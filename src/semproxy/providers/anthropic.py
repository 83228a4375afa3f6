"""Anthropic through its OpenAI SDK compatibility endpoint (chat only)."""

from types import MappingProxyType

from semproxy.providers.base import Provider


class AnthropicProvider(Provider):
    name = "anthropic"
    base_url = "https://api.anthropic.com"
    paths = MappingProxyType({"chat": "/v1/chat/completions"})
