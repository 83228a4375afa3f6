"""Client protocols by path, converters by (from, to): the two tables of the protocols room.

As in APISIX's ai-protocols, one route (say `uri: /v1/*`) serves every
protocol: `.../chat/completions`, `.../messages`, `.../messages/count_tokens`,
`.../responses`, `.../embeddings` and legacy `.../completions`. A path that
names none of them is no protocol (`protocol_for` says None): on a prefix
route it is an unknown endpoint (404, never sent upstream); a route written
for one exact path serves it as Chat Completions, as every route did before
the other protocols existed.

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
from semproxy.protocols.completions import CompletionsPassThrough, TextCompletions
from semproxy.protocols.contract import ClientProtocol, Converter
from semproxy.protocols.count_tokens import CountTokens, CountTokensPassThrough
from semproxy.protocols.embeddings import EmbeddingsPassThrough, OpenAIEmbeddings
from semproxy.protocols.messages import MessagesPassThrough
from semproxy.protocols.messages_to_chat import AnthropicMessages, MessagesToChat
from semproxy.protocols.responses_to_chat import OpenAIResponses, ResponsesToChat

CHAT_COMPLETIONS = ChatCompletions()
ANTHROPIC_MESSAGES = AnthropicMessages()
# Checked in order: "/chat/completions" before "/completions", which it also ends with.
BY_SUFFIX: tuple[tuple[str, ClientProtocol], ...] = (
    ("/chat/completions", CHAT_COMPLETIONS),
    ("/messages", ANTHROPIC_MESSAGES),
    ("/responses", OpenAIResponses()),
    ("/embeddings", OpenAIEmbeddings()),
    ("/messages/count_tokens", CountTokens()),
    ("/completions", TextCompletions()),
)
PROTOCOLS: dict[str, ClientProtocol] = {p.name: p for _, p in BY_SUFFIX}

_CONVERTERS: tuple[Converter, ...] = (
    ChatPassThrough(), MessagesPassThrough(), EmbeddingsPassThrough(),
    CountTokensPassThrough(), CompletionsPassThrough(),
    MessagesToChat(), ResponsesToChat(), ChatToMessages(),
)
CONVERTERS: dict[tuple[str, str], Converter] = {(c.source, c.target): c for c in _CONVERTERS}


def is_models(path: str, method: str) -> bool:
    """`GET .../models` and `GET .../models/{id}`: answered from the route's config, never
    sent upstream."""
    return method == "GET" and (path.endswith("/models") or "/models/" in path)


def protocol_for(path: str) -> ClientProtocol | None:
    """The protocol a path names; None for a path that names none."""
    for suffix, protocol in BY_SUFFIX:
        if path.endswith(suffix):
            return protocol
    return None


def unnamed_protocol(is_anthropic: bool) -> ClientProtocol:
    """The protocol of a request whose path names none: Chat Completions (what an exact
    route serves), or Messages for the shape of an Anthropic SDK's errors."""
    return ANTHROPIC_MESSAGES if is_anthropic else CHAT_COMPLETIONS


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
