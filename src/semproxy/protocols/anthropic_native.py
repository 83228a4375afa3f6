"""Chat Completions over Anthropic's native Messages API: the `anthropic-messages`
provider's two translations, the mirror of `protocols.anthropic`.

Out: system messages join into `system`; `tool` messages become `tool_result`
blocks of one user turn; assistant `tool_calls` become `tool_use` blocks;
`max_tokens` is required by Anthropic, so a request without one gets
DEFAULT_MAX_TOKENS. Back: the message's blocks become one choice, its
`stop_reason` a `finish_reason`, and its event stream Chat Completions chunks.
"""

from __future__ import annotations

from typing import Any

import orjson

from semproxy.protocols.events import decoded

DEFAULT_MAX_TOKENS = 4096
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                  "tool_use": "tool_calls", "refusal": "content_filter", "pause_turn": "stop"}


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
            system.append(_text(message.get("content")))
        elif role == "tool":
            _append(messages, "user", [{"type": "tool_result",
                                        "tool_use_id": message.get("tool_call_id", ""),
                                        "content": _text(message.get("content"))}])
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


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p["text"] for p in content
                        if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return [{"type": "text", "text": _text(content)}]
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


def parse_arguments(arguments: Any) -> Any:
    """Tool arguments as an object: a model may send invalid JSON, kept then as a string."""
    if not isinstance(arguments, str) or not arguments:
        return {}
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {"arguments": arguments}


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = _text(message.get("content"))
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        blocks.append({"type": "tool_use", "id": call.get("id", ""),
                       "name": function.get("name", ""),
                       "input": parse_arguments(function.get("arguments"))})
    return blocks


def to_completion(message: dict[str, Any]) -> dict[str, Any]:
    texts, calls = [], []
    for block in message.get("content") or ():
        if block.get("type") == "text":
            texts.append(block.get("text", ""))
        elif block.get("type") == "tool_use":
            calls.append({"id": block.get("id", ""), "type": "function", "function": {
                "name": block.get("name", ""),
                "arguments": orjson.dumps(block.get("input", {})).decode()}})
    reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        reply["tool_calls"] = calls
    return {"id": message.get("id", ""), "object": "chat.completion", "created": 0,
            "model": message.get("model", ""),
            "choices": [{"index": 0, "message": reply, "finish_reason": FINISH_REASONS.get(
                message.get("stop_reason") or "end_turn", "stop")}],
            "usage": chat_usage(message.get("usage"))}


def chat_usage(node: Any) -> dict[str, int]:
    node = node if isinstance(node, dict) else {}
    given = sum(int(node.get(k) or 0) for k in (
        "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    made = int(node.get("output_tokens") or 0)
    return {"prompt_tokens": given, "completion_tokens": made, "total_tokens": given + made}


def to_chat_error(body: bytes, status: int) -> bytes:
    """An Anthropic error body in OpenAI's envelope (type and message kept)."""
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        error = None
    if not isinstance(error, dict):
        error = {"type": "api_error", "message": f"upstream answered HTTP {status}"}
    return orjson.dumps({"error": {"message": str(error.get("message", "")),
                                   "type": str(error.get("type", "api_error")),
                                   "param": None, "code": None}})


class ChunksFromMessages:
    """Anthropic's event stream retold as Chat Completions chunks, ending in [DONE]."""

    def __init__(self) -> None:
        self._id = ""
        self._model = ""
        self._tools = -1  # index of the last tool call
        self._usage: dict[str, Any] = {}

    def feed(self, chunk: bytes) -> bytes:
        out = bytearray()
        for event in decoded(chunk):
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
            message = event.get("message") or {}
            self._id, self._model = message.get("id", ""), message.get("model", "")
            self._usage = dict(message.get("usage") or {})
            return self._chunk({"role": "assistant", "content": ""})
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") != "tool_use":
                return b""
            self._tools += 1
            return self._chunk({"tool_calls": [{"index": self._tools, "id": block.get("id"),
                                                "type": "function", "function": {
                                                    "name": block.get("name", ""),
                                                    "arguments": ""}}]})
        if kind == "content_block_delta":
            return self._delta(event.get("delta") or {})
        if kind == "message_delta":
            self._usage.update(event.get("usage") or {})
            reason = (event.get("delta") or {}).get("stop_reason") or "end_turn"
            return self._chunk({}, FINISH_REASONS.get(reason, "stop"))
        if kind == "message_stop":
            return self._chunk(None, usage=chat_usage(self._usage)) + b"data: [DONE]\n\n"
        if kind == "error":
            return b"data: " + orjson.dumps({"error": event.get("error")}) + b"\n\n"
        return b""

    def _delta(self, delta: dict[str, Any]) -> bytes:
        if delta.get("type") == "text_delta":
            return self._chunk({"content": delta.get("text", "")})
        if delta.get("type") == "input_json_delta":
            return self._chunk({"tool_calls": [{"index": self._tools, "function": {
                "arguments": delta.get("partial_json", "")}}]})
        return b""
