"""OpenAI Responses (`POST /v1/responses`) clients, stateless, served over Chat Completions.

`OpenAIResponses` is the client protocol (parse, errors); `ResponsesToChat`
the converter: requests to Chat, answers (whole, streamed, errors) back.
Request: `instructions` becomes the system message; `input` is a string (one
user message) or a list of items: messages with string or typed content,
`function_call` items (the assistant's tool calls) and `function_call_output`
items (`tool` messages). Answer: a `response` object whose `output` holds a
message item and one `function_call` item per tool call. Nothing is stored, so
`previous_response_id` is refused with a 400 that says so.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import orjson

from semproxy.errors import BadRequestError, UpstreamError, error_body
from semproxy.protocols.body import parse_object
from semproxy.protocols.chat import CHAT
from semproxy.protocols.contract import Parsed
from semproxy.protocols.envelope import UNTRANSLATABLE, read_error
from semproxy.protocols.events import DEFAULT_LIMIT
from semproxy.protocols.responses_stream import (
    ResponsesStream,
    call_item,
    message_item,
    response_object,
)
from semproxy.protocols.usage import chat_usage
from semproxy.semantic.query import RoutingInput, prompt_input
from semproxy.types import JSONObject, Usage, content_text

SAME_FIELDS = ("model", "temperature", "top_p", "stream", "parallel_tool_calls", "user")
ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "text")

_ids = itertools.count(1)
_prefix = os.urandom(6).hex()


def new_id(kind: str) -> str:
    return f"{kind}_{_prefix}{next(_ids):012x}"


RESPONSES = "responses"


class OpenAIResponses:
    name = RESPONSES

    def parse(self, body: bytes) -> Parsed:
        request = parse_object(body)
        if request.get("previous_response_id") is not None:
            raise BadRequestError("previous_response_id: this gateway does not store "
                                  "responses; send the whole conversation in 'input'")
        items = _items(request.get("input"))
        return Parsed(to_chat(request, items), routing_query(items))

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        return error_body(message, type_, code)  # Responses errors are OpenAI's envelope


class ResponsesToChat:
    """Responses requests to a Chat upstream, and its answers back as Responses."""

    source, target = RESPONSES, CHAT

    def request(self, body: JSONObject) -> JSONObject:
        return to_chat(body, _items(body.get("input")))

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        try:
            completion = orjson.loads(body)
            usage = chat_usage(completion.get("usage"))
            return orjson.dumps(from_chat(completion, usage)), usage
        except UNTRANSLATABLE as exc:
            raise UpstreamError("upstream answered with a body that is not a chat "
                                "completion") from exc

    def error(self, status: int, body: bytes) -> bytes:
        return error_body(*read_error(body, status))

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> ResponsesStream:
        return ResponsesStream(new_id("resp"), new_id("msg"), model or "", limit)


def _items(given: Any) -> list[Any]:
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    if not isinstance(given, list) or not given:
        raise BadRequestError("input: a string or a non-empty array of items is required")
    return given


def routing_query(items: list[Any]) -> RoutingInput:
    """The text of the last user input item."""
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            return prompt_input(_text(item.get("content")))
    return prompt_input("")


def _text(content: Any) -> str:
    return content_text(content, kinds=TEXT_PARTS)


def to_chat(request: dict[str, Any], items: list[Any]) -> dict[str, Any]:
    chat: dict[str, Any] = {k: request[k] for k in SAME_FIELDS if k in request}
    if isinstance(request.get("max_output_tokens"), int):
        chat["max_tokens"] = request["max_output_tokens"]
    messages: list[dict[str, Any]] = []
    if isinstance(request.get("instructions"), str):
        messages.append({"role": "system", "content": request["instructions"]})
    for i, item in enumerate(items):
        _add_item(messages, item, i)
    chat["messages"] = messages
    if request.get("tools") is not None:
        tools = request["tools"]
        if not isinstance(tools, list):
            raise BadRequestError("tools: must be an array")
        chat["tools"] = [_tool(t, i) for i, t in enumerate(tools)]
    if "tool_choice" in request:
        chat["tool_choice"] = _tool_choice(request["tool_choice"])
    text_format = (request.get("text") or {}).get("format") if isinstance(
        request.get("text"), dict) else None
    if isinstance(text_format, dict) and text_format.get("type") == "json_schema":
        schema = {k: text_format[k] for k in ("name", "schema", "strict") if k in text_format}
        chat["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif isinstance(text_format, dict) and text_format.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    return chat


def _add_item(messages: list[dict[str, Any]], item: Any, i: int) -> None:
    kind = item.get("type", "message") if isinstance(item, dict) else None
    if kind == "message" and item.get("role") in ROLES:
        messages.append(_message(item, i))
    elif kind == "function_call":
        call = {"id": item.get("call_id", ""), "type": "function", "function": {
            "name": item.get("name", ""), "arguments": item.get("arguments", "")}}
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant" and "tool_calls" in last:
            last["tool_calls"].append(call)  # parallel calls belong to one assistant turn
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind == "function_call_output":
        output = item.get("output")
        messages.append({"role": "tool", "tool_call_id": item.get("call_id", ""),
                         "content": output if isinstance(output, str) else _text(output)})
    elif kind != "reasoning":
        raise BadRequestError(f"input[{i}]: unsupported item (type {kind!r})")


def _message(item: dict[str, Any], i: int) -> dict[str, Any]:
    role = "system" if item["role"] == "developer" else item["role"]
    content = item.get("content")
    if isinstance(content, str) or role != "user":
        return {"role": role, "content": _text(content)}
    if not isinstance(content, list):
        raise BadRequestError(f"input[{i}].content: a string or an array of parts is required")
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in TEXT_PARTS:
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {
                "url": part["image_url"], "detail": part.get("detail", "auto")}})
        else:
            raise BadRequestError(f"input[{i}].content[{j}]: unsupported part (type {kind!r})")
    return {"role": role, "content": parts}


def _tool(tool: Any, i: int) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function" \
            or not isinstance(tool.get("name"), str):
        raise BadRequestError(f"tools[{i}]: only function tools are supported")
    function = {k: tool[k] for k in ("name", "description", "parameters", "strict")
                if tool.get(k) is not None}
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


def from_chat(completion: dict[str, Any], usage: Usage | None = None) -> dict[str, Any]:
    """A chat.completion as a Responses `response` (`usage`: the completion's, when the
    caller has read it already)."""
    if usage is None:
        usage = chat_usage(completion.get("usage"))
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    output: list[dict[str, Any]] = []
    if message.get("content"):
        output.append(message_item(new_id("msg"), message["content"]))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        output.append(call_item(new_id("fc"), call.get("id", ""), function.get("name", ""),
                                function.get("arguments", "")))
    return response_object(new_id("resp"), str(completion.get("model") or ""), output,
                           choice.get("finish_reason"), usage)
