"""OpenAI Chat Completions: the gateway's own format, relayed as it is."""

from __future__ import annotations

from semproxy.errors import error_body
from semproxy.protocols.body import parse_chat
from semproxy.protocols.contract import Parsed, StreamTranslator
from semproxy.semantic.query import routing_input


class ChatCompletions:
    name = "chat"

    def parse(self, body: bytes) -> Parsed:
        payload = parse_chat(body)
        return Parsed(payload, routing_input(payload))

    def reply(self, body: bytes) -> bytes:
        return body

    def stream(self, model: str | None) -> StreamTranslator | None:
        return None

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        return error_body(message, type_, code)
