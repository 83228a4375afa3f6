"""OpenRouter: many vendors' models behind one OpenAI-compatible API."""

from semproxy.providers.base import OpenAIStyleProvider


class OpenRouterProvider(OpenAIStyleProvider):
    name = "openrouter"
    base_url = "https://openrouter.ai"
    chat_path = "/api/v1/chat/completions"
    embeddings_path = "/api/v1/embeddings"
