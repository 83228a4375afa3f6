"""OpenAI Embeddings (`POST /v1/embeddings`) on an ai-proxy-multi route.

The body goes to the chosen instance's embeddings endpoint as the client sent
it (`options` still override its keys) and the answer comes back unchanged;
what the gateway adds is the balancer, health and failover. Embeddings requests
take no part in semantic routing: they carry no prompt to route on.
"""

from __future__ import annotations

from semproxy.errors import BadRequestError
from semproxy.protocols.body import parse_object
from semproxy.protocols.chat import ChatCompletions
from semproxy.protocols.contract import Parsed


class OpenAIEmbeddings(ChatCompletions):
    """OpenAI-shaped like Chat Completions (answers and errors pass as they are);
    only the request differs."""

    name = "embeddings"

    def parse(self, body: bytes) -> Parsed:
        request = parse_object(body)
        given = request.get("input")
        if not (isinstance(given, str) and given) and not (isinstance(given, list) and given):
            raise BadRequestError("input: a non-empty string or array is required")
        return Parsed(request, None)
