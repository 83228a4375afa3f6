"""Anthropic Messages (`POST /v1/messages`) clients served over Chat Completions upstreams.

`AnthropicMessages` is the client protocol (parse, errors); `MessagesToChat`
the converter: requests to Chat, answers (whole, streamed, errors) back.
Request: `system` becomes the first message; content blocks become content
parts (text, images as URLs or data URLs); `tool_use` blocks become the
assistant's `tool_calls` and `tool_result` blocks become `tool` messages,
placed before the rest of that user turn as Chat Completions requires.
Answer: choices[0] becomes content blocks, `finish_reason` a `stop_reason`,
usage input/output tokens.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import orjson

from semproxy.errors import BadRequestError, UpstreamError
from semproxy.protocols.body import parse_object
from semproxy.protocols.chat import CHAT
from semproxy.protocols.contract import Parsed
from semproxy.protocols.envelope import UNTRANSLATABLE, read_error
from semproxy.protocols.events import DEFAULT_LIMIT
from semproxy.protocols.messages import (
    MESSAGES,
    STOP_REASONS,
    assistant_message,
    parse_arguments,
)
from semproxy.protocols.messages_stream import MessagesStream, usage_object
from semproxy.protocols.usage import chat_usage
from semproxy.semantic.query import RoutingInput, prompt_input
from semproxy.types import JSONObject, Usage, content_text

# Passed through under the same name and meaning.
SAME_FIELDS = ("model", "temperature", "top_p", "stream")
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 503: "overloaded_error", 529: "overloaded_error"}

_ids = itertools.count(1)
_prefix = os.urandom(6).hex()


def message_id() -> str:
    return f"msg_{_prefix}{next(_ids):012x}"


class AnthropicMessages:
    name = MESSAGES

    def parse(self, body: bytes) -> Parsed:
        request = parse_object(body)
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequestError("messages: must be a non-empty array")
        if not isinstance(request.get("max_tokens"), int) or request["max_tokens"] < 1:
            raise BadRequestError("max_tokens: a positive integer is required")
        try:
            payload = to_chat(request, messages)
        except BadRequestError as exc:
            # Blocks Chat Completions cannot carry (documents, server tools, ...)
            # can still go, as they are, to a native Anthropic instance.
            return Parsed({}, routing_query(messages), request, exc)
        return Parsed(payload, routing_query(messages), request)

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        return error_body(status, message)


class MessagesToChat:
    """Messages requests to a Chat upstream, and its answers back as Messages."""

    source, target = MESSAGES, CHAT

    def request(self, body: JSONObject) -> JSONObject:
        return to_chat(body, body["messages"])

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        try:
            completion = orjson.loads(body)
            usage = chat_usage(completion.get("usage"))
            return orjson.dumps(from_chat(completion, usage)), usage
        except UNTRANSLATABLE as exc:
            raise not_a_completion() from exc

    def error(self, status: int, body: bytes) -> bytes:
        message, _, _ = read_error(body, status)
        return error_body(status, message)

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> MessagesStream:
        return MessagesStream(message_id(), model or "", limit)


def not_a_completion() -> UpstreamError:
    return UpstreamError("upstream answered with a body that is not a chat completion")


def error_body(status: int, message: str) -> bytes:
    kind = ERROR_TYPES.get(status, "api_error")
    return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})


def routing_query(messages: list[Any]) -> RoutingInput:
    """The last user turn's own text blocks; `tool_result` content is not the user's words."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return prompt_input(content)
        if isinstance(content, list) and (text := content_text(content, kinds=("text",))):
            return prompt_input(text)
    return prompt_input("")


def to_chat(request: dict[str, Any], messages: list[Any]) -> dict[str, Any]:
    chat: dict[str, Any] = {k: request[k] for k in SAME_FIELDS if k in request}
    chat["max_tokens"] = request["max_tokens"]
    system = _system(request.get("system"))
    chat["messages"] = [{"role": "system", "content": system}] if system else []
    for i, message in enumerate(messages):
        chat["messages"] += _message(message, i)
    if "stop_sequences" in request:
        chat["stop"] = request["stop_sequences"]
    if "tools" in request:
        chat["tools"] = [_tool(t, i) for i, t in enumerate(_list(request["tools"], "tools"))]
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        _tool_choice(chat, choice)
    metadata = request.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        chat["user"] = metadata["user_id"]
    return chat


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise BadRequestError(f"{path}: must be an array")
    return value


def _system(system: Any) -> str:
    if system is None or isinstance(system, str):
        return system or ""
    return content_text(_list(system, "system"), "\n")


def _message(message: Any, i: int) -> list[dict[str, Any]]:
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        raise BadRequestError(f"messages.{i}.role: must be 'user' or 'assistant'")
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": message["role"], "content": content}]
    blocks = _list(content, f"messages.{i}.content")
    if message["role"] == "assistant":
        return [assistant_message(blocks)]
    return _user(blocks, i)


def _user(blocks: list[Any], i: int) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": _image_url(block, i, j)}})
        elif kind == "tool_result":
            results.append({"role": "tool", "tool_call_id": block.get("tool_use_id", ""),
                            "content": content_text(block.get("content"), "\n")})
        elif kind != "thinking":
            raise BadRequestError(f"messages.{i}.content.{j}.type: unsupported block {kind!r}")
    return results + ([{"role": "user", "content": parts}] if parts else [])


def _image_url(block: dict[str, Any], i: int, j: int) -> str:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        return f"data:{source.get('media_type', '')};base64,{source.get('data', '')}"
    if isinstance(source, dict) and source.get("type") == "url":
        return str(source.get("url", ""))
    raise BadRequestError(f"messages.{i}.content.{j}.source: base64 or url image expected")


def _tool(tool: Any, i: int) -> dict[str, Any]:
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) \
            or not isinstance(tool.get("input_schema"), dict):
        raise BadRequestError(f"tools.{i}: a client tool with 'name' and 'input_schema' "
                              "is expected (server tools are not supported)")
    function = {"name": tool["name"], "parameters": tool["input_schema"]}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(chat: dict[str, Any], choice: dict[str, Any]) -> None:
    kind = choice.get("type")
    if kind == "tool":
        chat["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif kind in ("auto", "none"):
        chat["tool_choice"] = kind
    elif kind == "any":
        chat["tool_choice"] = "required"
    if choice.get("disable_parallel_tool_use") is True:
        chat["parallel_tool_calls"] = False


def from_chat(completion: dict[str, Any], usage: Usage | None = None) -> dict[str, Any]:
    """A chat.completion as an Anthropic message (`usage`: the completion's, when the
    caller has read it already)."""
    if usage is None:
        usage = chat_usage(completion.get("usage"))
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        content.append({"type": "tool_use", "id": call.get("id", ""),
                        "name": function.get("name", ""),
                        "input": parse_arguments(function.get("arguments"))})
    return {
        "id": message_id(), "type": "message", "role": "assistant",
        "model": completion.get("model", ""), "content": content,
        "stop_reason": STOP_REASONS.get(choice.get("finish_reason") or "stop", "end_turn"),
        "stop_sequence": None, "usage": usage_object(usage),
    }
