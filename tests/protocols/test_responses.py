"""OpenAI Responses <-> Chat Completions: the cases the SDK tests do not reach."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from semproxy.errors import BadRequestError
from semproxy.protocols.responses_to_chat import (
    OpenAIResponses,
    ResponsesToChat,
    from_chat,
    routing_query,
)


def parse(**request: Any) -> dict[str, Any]:
    return OpenAIResponses().parse(orjson.dumps({"model": "m", **request})).payload


def test_items_with_images_developer_text_and_parallel_calls_translate() -> None:
    sent = parse(input=[
        {"role": "developer", "content": "answer in json"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "what is"},
            {"type": "input_image", "image_url": "https://x/y.png"}]},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "1"},
        {"type": "reasoning", "summary": []},
    ], text={"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}}})
    assert sent["messages"][0] == {"role": "system", "content": "answer in json"}
    assert sent["messages"][1]["content"][1] == {
        "type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "auto"}}
    assert [c["id"] for c in sent["messages"][2]["tool_calls"]] == ["a", "b"]
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": "a", "content": "1"}
    assert len(sent["messages"]) == 4
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "n", "schema": {"type": "object"}}}


def test_routing_text_is_the_last_user_item() -> None:
    query = routing_query([{"role": "user", "content": "first"},
                           {"role": "assistant", "content": "ok"},
                           {"role": "user", "content": [{"type": "input_text", "text": "last"}]},
                           {"type": "function_call_output", "call_id": "a", "output": "x"}])
    assert query.text == "last"


@pytest.mark.parametrize(("request_", "field"), [
    ({"input": []}, "input"),
    ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0]"),
    ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0]"),
    ({"input": [{"role": "user", "content": [{"type": "input_file"}]}]}, "input[0].content[0]"),
])
def test_malformed_requests_are_refused_with_the_field_named(
        request_: dict[str, Any], field: str) -> None:
    with pytest.raises(BadRequestError) as raised:
        parse(**request_)
    assert raised.value.message.startswith(field + ":")


def test_a_length_stop_is_an_incomplete_response() -> None:
    response = from_chat({"model": "m", "choices": [
        {"message": {"content": "ab"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 9}})
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert response["usage"]["total_tokens"] == 11


def test_a_cut_stream_ends_incomplete_and_a_broken_one_with_an_error_event() -> None:
    stream = ResponsesToChat().events("m")
    body = {"choices": [{"index": 0, "delta": {"content": "ab"}, "finish_reason": "length"}]}
    out = stream.feed(b"data: " + orjson.dumps(body) + b"\n\ndata: [DONE]\n\n")
    assert out.rstrip().split(b"\n")[-2] == b"event: response.incomplete"
    broken = ResponsesToChat().events("m")
    event = broken.error("gone").split(b"\n")
    assert event[0] == b"event: error"
    assert orjson.loads(event[1][6:])["message"] == "gone"
