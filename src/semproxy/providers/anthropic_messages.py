"""`anthropic-messages`: Anthropic's native Messages API (`POST /v1/messages`).

The `anthropic` provider keeps meaning what it means in APISIX configs:
Anthropic's OpenAI-compatible endpoint. This one speaks Anthropic's own
protocol, so tool use, stop reasons and usage come back as Anthropic reports
them. A Chat Completions body is translated on the way out and the answer
(whole, streamed, or an error) on the way back (`protocols/chat_to_messages.py`),
so every client protocol, failover and metrics work as with any other
provider. An Anthropic client's own request is sent unchanged and its answer
relayed unchanged: nothing is lost to translation (cache control, documents,
thinking). Credentials go in `auth.header` (`x-api-key`); `anthropic-version`
is sent as 2023-06-01 unless the instance sets its own.
"""

from types import MappingProxyType

from semproxy.providers.base import Provider

API_VERSION = "2023-06-01"


class AnthropicMessagesProvider(Provider):
    name = "anthropic-messages"
    base_url = "https://api.anthropic.com"
    paths = MappingProxyType({"messages": "/v1/messages",
                              "count_tokens": "/v1/messages/count_tokens"})
    headers = MappingProxyType({"anthropic-version": API_VERSION})
