"""Client protocols by path, converters by (from, to): the two tables of the protocols room.

As in APISIX's ai-protocols, one route (say `uri: /v1/*`) serves every
protocol: `.../chat/completions`, `.../messages`, `.../responses` and
`.../embeddings`. Any other path on a route is served as Chat Completions,
which is what every route did before the other protocols existed.

A converter is found by the pair it joins, (the client's protocol, the
protocol spoken upstream), as Envoy AI Gateway's translator factory and
APISIX's converter registry find theirs. Chat Completions is the gateway's
own format: a request in another protocol is parsed into it, and an upstream
that speaks another one is reached from it, so every answer is at most two
conversions from the client: upstream -> Chat -> client. An instance that
speaks the client's protocol itself gets the client's body as it is.
"""

from __future__ import annotations

from semproxy.protocols.chat import CHAT, ChatCompletions, ChatPassThrough
from semproxy.protocols.chat_to_messages import ChatToMessages
from semproxy.protocols.contract import ClientProtocol, Converter
from semproxy.protocols.embeddings import EmbeddingsPassThrough, OpenAIEmbeddings
from semproxy.protocols.messages import MessagesPassThrough
from semproxy.protocols.messages_to_chat import AnthropicMessages, MessagesToChat
from semproxy.protocols.responses_to_chat import OpenAIResponses, ResponsesToChat

CHAT_COMPLETIONS = ChatCompletions()
BY_SUFFIX: tuple[tuple[str, ClientProtocol], ...] = (
    ("/chat/completions", CHAT_COMPLETIONS),
    ("/messages", AnthropicMessages()),
    ("/responses", OpenAIResponses()),
    ("/embeddings", OpenAIEmbeddings()),
)
PROTOCOLS: dict[str, ClientProtocol] = {p.name: p for _, p in BY_SUFFIX}

_CONVERTERS: tuple[Converter, ...] = (
    ChatPassThrough(), MessagesPassThrough(), EmbeddingsPassThrough(),
    MessagesToChat(), ResponsesToChat(), ChatToMessages(),
)
CONVERTERS: dict[tuple[str, str], Converter] = {(c.source, c.target): c for c in _CONVERTERS}


def is_models(path: str, method: str) -> bool:
    """`GET .../models`: answered from the route's config, never sent upstream."""
    return method == "GET" and path.endswith("/models")


def protocol_for(path: str) -> ClientProtocol:
    for suffix, protocol in BY_SUFFIX:
        if path.endswith(suffix):
            return protocol
    return CHAT_COMPLETIONS


def converter(source: str, target: str) -> Converter | None:
    return CONVERTERS.get((source, target))


def conversion(client: str, spoken: str) -> tuple[Converter, Converter | None] | None:
    """How a client of protocol `client` is served by an upstream speaking `spoken`:
    the converter that reads the upstream (Chat from `spoken`, or the identity when
    `spoken` is the client's own) and the one back to the client (None: none needed).
    None when no pair of converters joins them."""
    if spoken == client:
        own = converter(client, client)
        return None if own is None else (own, None)
    upstream = converter(CHAT, spoken)
    back = None if client == CHAT else converter(client, CHAT)
    if upstream is None or (back is None and client != CHAT):
        return None
    return upstream, back
