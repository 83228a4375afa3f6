"""Anthropic's token counting (`POST /v1/messages/count_tokens`): `{"input_tokens": N}` for a
Messages request, without an answer and without a bill.

An instance that speaks Anthropic's own API (`anthropic-messages`) is asked:
its count is Anthropic's. Any other instance has no such endpoint, so the
gateway counts itself (`LocalTokenCounter`, an in-process upstream behind the
transport like the echo one): the text of the system prompt, the messages and
the tool definitions through `governance.tokens.count_tokens` (a Llama-2
tokenizer, at or above OpenAI's o200k count for every text measured, median
1.25x), a fixed count per image and per message, and the tool-use prompt
Anthropic adds. It is an estimate, documented as one: another provider's
tokenizer counts differently, and nothing is sent to a model to find out.
The request is checked as a Messages request is, except that `max_tokens` is
not needed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from semproxy.errors import BadRequestError
from semproxy.governance.tokens import IMAGE_TOKENS, MESSAGE_TOKENS, count_tokens
from semproxy.protocols.body import parse_object
from semproxy.protocols.chat import ChatEvents
from semproxy.protocols.contract import Parsed
from semproxy.protocols.events import DEFAULT_LIMIT
from semproxy.protocols.messages_to_chat import error_body, routing_query, to_chat
from semproxy.transport.memory import MemoryReply
from semproxy.transport.target import Target
from semproxy.types import JSONObject, Usage

COUNT_TOKENS = "count_tokens"
# Where an instance without its own counting endpoint is counted: `LocalTokenCounter`.
LOCAL_SCHEME = "count"
LOCAL_URL = "count://local/v1/messages/count_tokens"
# The fields Anthropic's endpoint takes; an instance's other `options` (max_tokens,
# temperature) would be refused there.
FIELDS = ("model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers")
TOOLS_TOKENS = 350  # the tool-use system prompt Anthropic adds when tools are given


class CountTokens:
    name = COUNT_TOKENS

    def parse(self, body: bytes) -> Parsed:
        request = parse_object(body)
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequestError("messages: must be a non-empty array")
        try:
            payload = to_chat({**request, "max_tokens": 1}, messages)
        except BadRequestError:
            payload = {}  # blocks Chat cannot carry are still counted
        return Parsed(payload, routing_query(messages), native=request)

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        return error_body(status, message)


class CountTokensPassThrough:
    """Counting requests to an endpoint that counts (Anthropic's own, or the local one):
    the client's body with only the fields counting takes; the answer as it is."""

    source = target = COUNT_TOKENS

    def request(self, body: JSONObject) -> JSONObject:
        return {k: body[k] for k in FIELDS if k in body}

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        return body, None  # a count is not an answer: nothing was generated or billed

    def error(self, status: int, body: bytes) -> bytes:
        return body

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> ChatEvents:
        return ChatEvents()  # counting never streams


class LocalTokenCounter:
    """The transport behind `count://` targets: counts a Messages request in process, on a
    worker thread (the tokenizer takes about 3 us a token, and loads on first use)."""

    async def post(self, target: Target, data: bytes, request_id: str = "") -> MemoryReply:
        text, fixed = counted_parts(orjson.loads(data))
        tokens = await asyncio.to_thread(count_tokens, text)
        return MemoryReply([orjson.dumps({"input_tokens": tokens + fixed})],
                           "application/json")

    async def get(self, target: Target) -> MemoryReply:
        return MemoryReply([], "text/plain")

    async def aclose(self) -> None:
        return None


def counted_parts(request: dict[str, Any]) -> tuple[str, int]:
    """The text a tokenizer counts, and the tokens counted without it (images, per-message
    framing, the tool-use prompt)."""
    texts: list[str] = []
    fixed = 0
    _blocks(request.get("system"), texts)
    for message in request.get("messages") or ():
        fixed += MESSAGE_TOKENS
        if isinstance(message, dict):
            fixed += _blocks(message.get("content"), texts)
    tools = request.get("tools")
    if tools:
        texts.append(orjson.dumps(tools).decode())
        fixed += TOOLS_TOKENS
    return "\n".join(texts), fixed


def _blocks(content: Any, texts: list[str]) -> int:
    """Adds the text of a content (a string, or blocks) to `texts`; returns its images'
    tokens."""
    if isinstance(content, str):
        texts.append(content)
        return 0
    images = 0
    for block in content if isinstance(content, list) else ():
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "image":
            images += IMAGE_TOKENS
        elif kind in ("text", "thinking") and isinstance(block.get(kind), str):
            texts.append(block[kind])
        elif kind == "tool_result":
            images += _blocks(block.get("content"), texts)
        elif block is not None:  # tool_use input, documents, anything else: its JSON
            texts.append(orjson.dumps(block).decode())
    return images
