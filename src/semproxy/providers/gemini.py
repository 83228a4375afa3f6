"""Google Gemini through its OpenAI-compatible endpoint."""

from semproxy.providers.base import OpenAIStyleProvider


class GeminiProvider(OpenAIStyleProvider):
    name = "gemini"
    base_url = "https://generativelanguage.googleapis.com"
    chat_path = "/v1beta/openai/chat/completions"
    embeddings_path = "/v1beta/openai/embeddings"
