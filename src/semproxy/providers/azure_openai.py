"""Azure OpenAI: the deployment is part of the URL, so the body carries no model.

Give the full deployment URL as `override.endpoint`, or only the resource host, in
which case the deployment is taken from `options.model`. Auth is the `api-key`
header (`auth.header: {api-key: ...}`).
"""

from types import MappingProxyType

from semproxy.providers.base import Provider


class AzureOpenAIProvider(Provider):
    name = "azure-openai"
    base_url = None
    paths = MappingProxyType({
        "chat": "/openai/deployments/{model}/chat/completions?api-version=2024-10-21",
        "embeddings": "/openai/deployments/{model}/embeddings?api-version=2024-10-21",
        "completions": "/openai/deployments/{model}/completions?api-version=2024-10-21",
    })
    sends_model = False
