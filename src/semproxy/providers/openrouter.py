"""OpenRouter: many vendors' models behind one OpenAI-compatible API."""

from types import MappingProxyType

from semproxy.providers.base import Provider


class OpenRouterProvider(Provider):
    name = "openrouter"
    base_url = "https://openrouter.ai"
    paths = MappingProxyType({"chat": "/api/v1/chat/completions",
                              "embeddings": "/api/v1/embeddings",
                              "completions": "/api/v1/completions"})
