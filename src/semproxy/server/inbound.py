"""Which client protocol a request speaks, told by the end of its path.

As in APISIX's ai-protocols, one route (say `uri: /v1/*`) serves every
protocol: `.../chat/completions`, `.../messages`, `.../responses` and
`.../embeddings`. Any other path on a route is served as Chat Completions,
which is what every route did before the other protocols existed.
"""

from __future__ import annotations

from semproxy.protocols.anthropic import AnthropicMessages
from semproxy.protocols.chat import ChatCompletions
from semproxy.protocols.contract import ClientProtocol
from semproxy.protocols.embeddings import OpenAIEmbeddings
from semproxy.protocols.responses import OpenAIResponses

CHAT = ChatCompletions()
EMBEDDINGS = OpenAIEmbeddings()
BY_SUFFIX: tuple[tuple[str, ClientProtocol], ...] = (
    ("/chat/completions", CHAT),
    ("/messages", AnthropicMessages()),
    ("/responses", OpenAIResponses()),
    ("/embeddings", EMBEDDINGS),
)


def is_models(path: str, method: str) -> bool:
    """`GET .../models`: answered from the route's config, never sent upstream."""
    return method == "GET" and path.endswith("/models")


def protocol_for(path: str) -> ClientProtocol:
    for suffix, protocol in BY_SUFFIX:
        if path.endswith(suffix):
            return protocol
    return CHAT
