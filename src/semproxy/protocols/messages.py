"""Anthropic Messages pieces both translations share, and the native pass-through.

`messages_to_chat` serves Messages clients over Chat upstreams and
`chat_to_messages` sends Chat requests to Anthropic's own API; both turn
Anthropic assistant blocks into a Chat message and map stop reasons, so that
is written once here. `MessagesPassThrough` is the identity converter of a
Messages request sent as it is to an instance that speaks Messages: it changes
nothing and reads the token usage.
"""

from __future__ import annotations

from typing import Any

import orjson

from semproxy.protocols.chat import stream_error
from semproxy.protocols.events import DEFAULT_LIMIT, decoded
from semproxy.protocols.usage import anthropic_counts, anthropic_usage, body_usage
from semproxy.types import JSONObject, Usage

MESSAGES = "messages"
# Chat `finish_reason` -> Anthropic `stop_reason`, and back.
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
                "function_call": "tool_use", "content_filter": "refusal"}
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                  "tool_use": "tool_calls", "refusal": "content_filter", "pause_turn": "stop"}


def parse_arguments(arguments: Any) -> Any:
    """Tool arguments as an object: a model may send invalid JSON, kept then as a string."""
    if not isinstance(arguments, str) or not arguments:
        return {}
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {"arguments": arguments}


def assistant_message(blocks: Any) -> dict[str, Any]:
    """Anthropic assistant content blocks as one Chat assistant message: the text blocks
    joined, each `tool_use` block a tool call (thinking and other blocks dropped)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else ():
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            calls.append({"id": block.get("id", ""), "type": "function", "function": {
                "name": block.get("name", ""),
                "arguments": orjson.dumps(block.get("input", {})).decode()}})
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


class MessagesEvents:
    """A native Anthropic stream passed on unchanged: the input count from `message_start`,
    the output count from `message_delta`, and `message_stop` as its end."""

    __slots__ = ("_counts", "done", "failed")

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self.done = False
        self.failed = False

    @property
    def usage(self) -> Usage | None:
        return anthropic_usage(self._counts)

    def feed(self, events: bytes) -> bytes:
        if b'"usage"' in events:
            for event in decoded(events):
                if event is None:
                    continue
                message = event.get("message")
                node = message.get("usage") if isinstance(message, dict) else event.get("usage")
                self._counts.update(anthropic_counts(node))
        if b"message_stop" in events or b'"error"' in events:
            for event in decoded(events):
                kind = None if event is None else event.get("type")
                self.done = self.done or kind == "message_stop"
                self.failed = self.failed or kind == "error"
        return events

    def close(self) -> bytes:
        return b""

    def error(self, message: str) -> bytes:
        self.failed = True
        # The event a broken native stream has always ended with: OpenAI's shape.
        return stream_error(message)


class MessagesPassThrough:
    """Messages to an instance that speaks Messages: the identity."""

    source = target = MESSAGES

    def request(self, body: JSONObject) -> JSONObject:
        return body

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        return body, body_usage(body, anthropic=True)

    def error(self, status: int, body: bytes) -> bytes:
        return body

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> MessagesEvents:
        return MessagesEvents()
