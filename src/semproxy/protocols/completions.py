"""Legacy OpenAI text completions (`POST /v1/completions`), still spoken by vLLM clients and
many tools.

The body goes, as the client sent it, to an instance that speaks the protocol
itself (OpenAI-style providers declare its path); no other protocol carries
it, so instances without it cannot serve it. It is routed on its prompt: a
string, or the first string of a batch (token-id prompts carry no text and
route as an empty prompt). Answers and errors are OpenAI's, passed on as they
are; a stream is read for its usage chunk and `[DONE]` like a chat stream.
"""

from __future__ import annotations

from typing import Any

from semproxy.errors import BadRequestError, error_body
from semproxy.protocols.body import parse_object
from semproxy.protocols.chat import ChatEvents
from semproxy.protocols.contract import Parsed
from semproxy.protocols.events import DEFAULT_LIMIT
from semproxy.protocols.usage import body_usage
from semproxy.semantic.query import RoutingInput, prompt_input
from semproxy.types import JSONObject, Usage

COMPLETIONS = "completions"


class TextCompletions:
    name = COMPLETIONS

    def parse(self, body: bytes) -> Parsed:
        request = parse_object(body)
        if "prompt" not in request:
            raise BadRequestError("prompt: required (a string, an array of strings, or "
                                  "token ids)")
        return Parsed(request, routing_query(request["prompt"]), native=request)

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        return error_body(message, type_, code)


def routing_query(prompt: Any) -> RoutingInput:
    if isinstance(prompt, list):
        prompt = next((p for p in prompt if isinstance(p, str)), "")
    return prompt_input(prompt if isinstance(prompt, str) else "")


class CompletionsPassThrough:
    """Text completions to an instance that speaks them: the identity, which asks streams
    for their usage chunk as the chat pass-through does."""

    source = target = COMPLETIONS

    def request(self, body: JSONObject) -> JSONObject:
        if body.get("stream") is True:
            opts = body.get("stream_options")
            body["stream_options"] = {**(opts if isinstance(opts, dict) else {}),
                                      "include_usage": True}
        return body

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        return body, body_usage(body)

    def error(self, status: int, body: bytes) -> bytes:
        return body

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> ChatEvents:
        return ChatEvents()
