"""DeepSeek's OpenAI-compatible API (chat only)."""

from semproxy.providers.base import OpenAIStyleProvider


class DeepSeekProvider(OpenAIStyleProvider):
    name = "deepseek"
    base_url = "https://api.deepseek.com"
    chat_path = "/chat/completions"
    embeddings_path = None
