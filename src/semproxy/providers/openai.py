"""OpenAI itself: the reference wire format."""

from semproxy.providers.base import OpenAIStyleProvider


class OpenAIProvider(OpenAIStyleProvider):
    name = "openai"
