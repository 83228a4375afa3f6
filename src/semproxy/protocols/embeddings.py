"""OpenAI Embeddings (`POST /v1/embeddings`) on an ai-proxy-multi route.

The body goes to the chosen instance's embeddings endpoint as the client sent
it (`options` still override its keys) and the answer comes back unchanged;
what the gateway adds is the balancer, health and failover. Embeddings requests
take no part in semantic routing: they carry no prompt to route on.
"""

from __future__ import annotations

from semproxy.errors import BadRequestError, error_body
from semproxy.protocols.body import parse_object
from semproxy.protocols.contract import Parsed, StreamTranslator


class OpenAIEmbeddings:
    name = "embeddings"

    def parse(self, body: bytes) -> Parsed:
        request = parse_object(body)
        given = request.get("input")
        if not (isinstance(given, str) and given) and not (isinstance(given, list) and given):
            raise BadRequestError("input: a non-empty string or array is required")
        return Parsed(request, None)

    def reply(self, body: bytes) -> bytes:
        return body

    def stream(self, model: str | None) -> StreamTranslator | None:
        return None

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        return error_body(message, type_, code)
