"""OpenAI Embeddings (`POST /v1/embeddings`) on an ai-proxy-multi route.

The body goes to the chosen instance's embeddings endpoint as the client sent
it (`options` still override its keys) and the answer comes back unchanged;
what the gateway adds is the balancer, health and failover. Embeddings requests
take no part in semantic routing: they carry no prompt to route on.
"""

from __future__ import annotations

from semproxy.errors import BadRequestError, error_body
from semproxy.protocols.body import parse_object
from semproxy.protocols.chat import ChatEvents
from semproxy.protocols.contract import Parsed
from semproxy.protocols.envelope import read_error
from semproxy.protocols.events import DEFAULT_LIMIT
from semproxy.protocols.usage import body_usage
from semproxy.types import JSONObject, Usage

EMBEDDINGS = "embeddings"


class OpenAIEmbeddings:
    """OpenAI-shaped like Chat Completions (answers and errors pass as they are);
    only the request differs."""

    name = EMBEDDINGS

    def parse(self, body: bytes) -> Parsed:
        request = parse_object(body)
        given = request.get("input")
        if not (isinstance(given, str) and given) and not (isinstance(given, list) and given):
            raise BadRequestError("input: a non-empty string or array is required")
        return Parsed(request, None, native=request)

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        return error_body(message, type_, code)


class EmbeddingsPassThrough:
    """Embeddings to an embeddings upstream: answers as they are (their usage read), and
    upstream errors in OpenAI's envelope whatever shape they came in."""

    source = target = EMBEDDINGS

    def request(self, body: JSONObject) -> JSONObject:
        return body

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        return body, body_usage(body)

    def error(self, status: int, body: bytes) -> bytes:
        return error_body(*read_error(body, status))

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> ChatEvents:
        return ChatEvents()  # embeddings never stream; a stray event stream passes as it is
