"""Provider registry: the config `provider` string -> provider class.

Checked when config loads, so an unknown provider is a config error, never a
request-time surprise.
"""

from __future__ import annotations

from semproxy.providers.anthropic import AnthropicProvider
from semproxy.providers.anthropic_messages import AnthropicMessagesProvider
from semproxy.providers.azure_openai import AzureOpenAIProvider
from semproxy.providers.base import Provider
from semproxy.providers.deepseek import DeepSeekProvider
from semproxy.providers.echo import EchoProvider
from semproxy.providers.gemini import GeminiProvider
from semproxy.providers.mistral import MistralProvider
from semproxy.providers.openai import OpenAIProvider
from semproxy.providers.openai_compatible import OpenAICompatibleProvider
from semproxy.providers.openrouter import OpenRouterProvider

PROVIDERS: dict[str, type[Provider]] = {
    cls.name: cls
    for cls in (
        OpenAIProvider, OpenAICompatibleProvider, AzureOpenAIProvider, DeepSeekProvider,
        OpenRouterProvider, MistralProvider, GeminiProvider, AnthropicProvider,
        AnthropicMessagesProvider, EchoProvider,
    )
}

# `local` is not an HTTP provider: it names the in-process embedding model.
LOCAL_EMBEDDINGS = "local"


def embedding_provider_names() -> list[str]:
    return sorted([LOCAL_EMBEDDINGS, *(n for n, c in PROVIDERS.items() if c.has_embeddings())])
