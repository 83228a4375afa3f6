"""DeepSeek's OpenAI-compatible API (chat only)."""

from types import MappingProxyType

from semproxy.providers.base import Provider


class DeepSeekProvider(Provider):
    name = "deepseek"
    base_url = "https://api.deepseek.com"
    paths = MappingProxyType({"chat": "/chat/completions"})
