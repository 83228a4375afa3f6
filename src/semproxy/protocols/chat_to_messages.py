"""Chat Completions requests sent to Anthropic's own Messages API (the `anthropic-messages`
provider), and its answers back as Chat Completions: the mirror of `messages_to_chat`.

Out: system messages join into `system`; `tool` messages become `tool_result`
blocks of one user turn; assistant `tool_calls` become `tool_use` blocks;
`max_tokens` is required by Anthropic, so a request without one gets
DEFAULT_MAX_TOKENS. Back: the message's blocks become one choice, its
`stop_reason` a `finish_reason`, and its event stream Chat Completions chunks.
"""

from __future__ import annotations

from typing import Any

import orjson

from semproxy.errors import UpstreamError
from semproxy.protocols.chat import CHAT, stream_error
from semproxy.protocols.envelope import UNTRANSLATABLE, error_object
from semproxy.protocols.events import DEFAULT_LIMIT, decoded
from semproxy.protocols.messages import (
    FINISH_REASONS,
    MESSAGES,
    assistant_message,
    parse_arguments,
)
from semproxy.protocols.usage import anthropic_counts, anthropic_usage, chat_usage_object
from semproxy.types import JSONObject, Usage, content_text

DEFAULT_MAX_TOKENS = 4096


class ChatToMessages:
    """Chat requests to an Anthropic Messages upstream, and its answers back as Chat."""

    source, target = CHAT, MESSAGES

    def request(self, body: JSONObject) -> JSONObject:
        return to_messages(body)

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        try:
            message = orjson.loads(body)
            usage = anthropic_usage(anthropic_counts(message.get("usage")))
            return orjson.dumps(to_completion(message, usage)), usage
        except UNTRANSLATABLE as exc:
            raise UpstreamError("upstream answered with a body that is not an Anthropic "
                                "message") from exc

    def error(self, status: int, body: bytes) -> bytes:
        return to_chat_error(body, status)

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> ChunksFromMessages:
        return ChunksFromMessages()


def to_messages(chat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: chat[k] for k in ("model", "temperature", "top_p", "stream")
                           if k in chat}
    limit = chat.get("max_tokens", chat.get("max_completion_tokens"))
    out["max_tokens"] = limit if isinstance(limit, int) else DEFAULT_MAX_TOKENS
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in chat.get("messages") or ():
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(content_text(message.get("content")))
        elif role == "tool":
            _append(messages, "user", [{"type": "tool_result",
                                        "tool_use_id": message.get("tool_call_id", ""),
                                        "content": content_text(message.get("content"))}])
        elif role == "assistant":
            _append(messages, "assistant", _assistant_blocks(message))
        else:
            _append(messages, "user", _user_blocks(message.get("content")))
    out["messages"] = messages
    if system:
        out["system"] = "\n".join(system)
    _options(chat, out)
    return out


def _options(chat: dict[str, Any], out: dict[str, Any]) -> None:
    stop = chat.get("stop")
    if stop:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else stop
    if chat.get("tools"):
        out["tools"] = [{"name": (t.get("function") or {}).get("name", ""),
                         "description": (t.get("function") or {}).get("description", ""),
                         "input_schema": (t.get("function") or {}).get("parameters")
                         or {"type": "object"}} for t in chat["tools"]]
    choice = chat.get("tool_choice")
    tool_choice: dict[str, Any] | None = None
    if choice in ("auto", "none"):
        tool_choice = {"type": choice}
    elif choice == "required":
        tool_choice = {"type": "any"}
    elif isinstance(choice, dict):
        tool_choice = {"type": "tool", "name": (choice.get("function") or {}).get("name")}
    if chat.get("parallel_tool_calls") is False and chat.get("tools"):
        tool_choice = {**(tool_choice or {"type": "auto"}), "disable_parallel_tool_use": True}
    if tool_choice is not None:
        out["tool_choice"] = tool_choice
    if isinstance(chat.get("user"), str):
        out["metadata"] = {"user_id": chat["user"]}


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Consecutive turns of one role merge (tool results then the user's text)."""
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"] += blocks
    else:
        messages.append({"role": role, "content": blocks})


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return [{"type": "text", "text": content_text(content)}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": part.get("text", "")})
        elif part.get("type") == "image_url":
            blocks.append({"type": "image", "source": _image_source(
                (part.get("image_url") or {}).get("url", ""))})
    return blocks


def _image_source(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media, _, data = url[5:].partition(";base64,")
        return {"type": "base64", "media_type": media, "data": data}
    return {"type": "url", "url": url}


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = content_text(message.get("content"))
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        blocks.append({"type": "tool_use", "id": call.get("id", ""),
                       "name": function.get("name", ""),
                       "input": parse_arguments(function.get("arguments"))})
    return blocks


def to_completion(message: dict[str, Any], usage: Usage | None) -> dict[str, Any]:
    """An Anthropic message as a chat.completion (its usage read by the caller)."""
    return {"id": message.get("id", ""), "object": "chat.completion", "created": 0,
            "model": message.get("model", ""),
            "choices": [{"index": 0, "message": assistant_message(message.get("content")),
                         "finish_reason": FINISH_REASONS.get(
                             message.get("stop_reason") or "end_turn", "stop")}],
            "usage": chat_usage_object(usage)}


def to_chat_error(body: bytes, status: int) -> bytes:
    """An Anthropic error body in OpenAI's envelope (type and message kept)."""
    error = error_object(body)
    if error is None:
        error = {"type": "api_error", "message": f"upstream answered HTTP {status}"}
    return orjson.dumps({"error": {"message": str(error.get("message", "")),
                                   "type": str(error.get("type", "api_error")),
                                   "param": None, "code": None}})


class ChunksFromMessages:
    """Anthropic's event stream retold as Chat Completions chunks, ending in [DONE].

    Each `tool_use` block becomes a tool call numbered in order; its argument pieces
    find their call by the block's `index`. Nothing is translated after
    `message_stop` or an error event.
    """

    def __init__(self) -> None:
        self._id = ""
        self._model = ""
        self._calls: dict[Any, int] = {}  # content block index -> tool call index
        self._counts: dict[str, int] = {}
        self.done = False
        self.failed = False

    @property
    def usage(self) -> Usage | None:
        return anthropic_usage(self._counts)

    def close(self) -> bytes:
        return b""

    def error(self, message: str) -> bytes:
        self.failed = True
        return stream_error(message)

    def feed(self, chunk: bytes) -> bytes:
        out = bytearray()
        for event in decoded(chunk):
            if self.done or self.failed:
                break
            if event is not None:
                out += self._event(event)
        return bytes(out)

    def _chunk(self, delta: dict[str, Any] | None, finish: str | None = None,
               **extra: Any) -> bytes:
        body = {"id": self._id, "object": "chat.completion.chunk", "created": 0,
                "model": self._model, "choices": [] if delta is None else [
                    {"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return b"data: " + orjson.dumps(body) + b"\n\n"

    def _event(self, event: dict[str, Any]) -> bytes:
        kind = event.get("type")
        if kind == "message_start":
            message = _object(event.get("message"))
            self._id, self._model = _text(message.get("id")), _text(message.get("model"))
            self._counts = anthropic_counts(message.get("usage"))
            return self._chunk({"role": "assistant", "content": ""})
        if kind == "content_block_start":
            return self._block(event.get("index"), _object(event.get("content_block")))
        if kind == "content_block_delta":
            return self._delta(event.get("index"), _object(event.get("delta")))
        if kind == "message_delta":
            self._counts.update(anthropic_counts(event.get("usage")))
            reason = _text(_object(event.get("delta")).get("stop_reason")) or "end_turn"
            return self._chunk({}, FINISH_REASONS.get(reason, "stop"))
        if kind == "message_stop":
            self.done = True
            return self._chunk(None, usage=chat_usage_object(self.usage)) + b"data: [DONE]\n\n"
        if kind == "error":  # the upstream's error object, relayed as it came
            self.failed = True
            return b"data: " + orjson.dumps({"error": event.get("error")}) + b"\n\n"
        return b""

    def _block(self, index: Any, block: dict[str, Any]) -> bytes:
        if block.get("type") != "tool_use":
            return b""
        call = self._calls[_key(index)] = len(self._calls)
        return self._chunk({"tool_calls": [{"index": call, "id": _text(block.get("id")),
                                            "type": "function", "function": {
                                                "name": _text(block.get("name")),
                                                "arguments": ""}}]})

    def _delta(self, index: Any, delta: dict[str, Any]) -> bytes:
        if delta.get("type") == "text_delta":
            return self._chunk({"content": _text(delta.get("text"))})
        call = self._calls.get(_key(index))
        if delta.get("type") == "input_json_delta" and call is not None:
            return self._chunk({"tool_calls": [{"index": call, "function": {
                "arguments": _text(delta.get("partial_json"))}}]})
        return b""


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _key(index: Any) -> Any:
    return index if type(index) is int else None
