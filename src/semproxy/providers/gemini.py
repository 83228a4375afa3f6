"""Google Gemini through its OpenAI-compatible endpoint."""

from types import MappingProxyType

from semproxy.providers.base import Provider


class GeminiProvider(Provider):
    name = "gemini"
    base_url = "https://generativelanguage.googleapis.com"
    paths = MappingProxyType({"chat": "/v1beta/openai/chat/completions",
                              "embeddings": "/v1beta/openai/embeddings"})
