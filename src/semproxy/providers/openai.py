"""OpenAI itself: the reference wire format."""

from semproxy.providers.base import Provider


class OpenAIProvider(Provider):
    name = "openai"
