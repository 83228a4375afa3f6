"""Any self-hosted OpenAI-compatible server (vLLM, Ollama, llama.cpp, TGI).

There is no public default host, so `override.endpoint` is required.
"""

from semproxy.providers.base import Provider


class OpenAICompatibleProvider(Provider):
    name = "openai-compatible"
    base_url = None
