"""Which client protocol a request speaks, told by the end of its path.

As in APISIX's ai-protocols, one route (say `uri: /v1/*`) serves every
protocol: `.../chat/completions`, `.../messages`, `.../responses` and
`.../embeddings`. Any other path on a route is served as Chat Completions,
which is what every route did before the other protocols existed.
"""

from __future__ import annotations

import orjson

from semproxy.errors import UpstreamError, error_body
from semproxy.protocols.anthropic import AnthropicMessages
from semproxy.protocols.chat import ChatCompletions
from semproxy.protocols.contract import ClientProtocol, StreamTranslator
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


def translate(protocol: ClientProtocol, status: int, body: bytes) -> bytes:
    """An upstream answer in the client's protocol: the reply, or the error it reports."""
    if status < 400:
        try:
            return protocol.reply(body)
        except (orjson.JSONDecodeError, TypeError, AttributeError) as exc:
            raise UpstreamError("upstream answered with a body that is not a chat "
                                "completion") from exc
    message, type_, code = upstream_error(body, status)
    return protocol.error(status, message, type_, code)


def upstream_error(body: bytes, status: int) -> tuple[str, str, str | None]:
    """Message, type and code of an upstream error body, whatever its shape."""
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code")
        return (error["message"], str(error.get("type") or "upstream_error"),
                code if isinstance(code, str) else None)
    return f"upstream answered HTTP {status}", "upstream_error", None


def broken_stream(translator: StreamTranslator | None) -> bytes:
    """The event that ends a stream whose upstream broke, in the client's protocol."""
    message = "upstream stream ended unexpectedly"
    if translator is not None:
        return translator.error(message)
    return b"data: " + error_body(message, "upstream_error", "bad_gateway") + b"\n\n"
