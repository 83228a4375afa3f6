"""Stream translation under hostile upstreams (issue 24's probe, one case per item):
interleaved parallel tool calls, events after the end, errors and cuts mid-stream,
bounded memory, the instance's model, and counts no upstream can mean."""

from __future__ import annotations

import contextlib
from typing import Any

import orjson
import pytest

from semproxy.errors import UpstreamError
from semproxy.protocols.contract import EventConverter
from semproxy.protocols.messages_to_chat import MessagesToChat
from semproxy.protocols.registry import CONVERTERS
from semproxy.protocols.responses_to_chat import ResponsesToChat
from semproxy.protocols.usage import anthropic_counts, chat_usage

TRANSLATORS = {"messages": MessagesToChat, "responses": ResponsesToChat}


def sse(*chunks: dict[str, Any], done: bool = False) -> bytes:
    out = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")


def delta(finish: str | None = None, model: str = "inst-model", **fields: Any
          ) -> dict[str, Any]:
    return {"model": model, "choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def call(index: int, arguments: str, call_id: str | None = None, name: str = "f"
         ) -> dict[str, Any]:
    piece: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        piece.update(id=call_id, type="function")
        piece["function"]["name"] = name
    return delta(tool_calls=[piece])


def named(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in raw.decode().strip().split("\n\n"):
        name, data = block.split("\n")
        out.append((name.removeprefix("event: "), orjson.loads(data.removeprefix("data: "))))
    return out


def run(stream: EventConverter, upstream: bytes) -> list[tuple[str, dict[str, Any]]]:
    return named(stream.feed(upstream) + stream.close())


INTERLEAVED = sse(call(0, '{"x"', "a", "fa"), call(1, '{"y"', "b", "fb"), call(0, ": 1}"),
                  call(1, ": 2}"), delta("tool_calls"), done=True)


def test_interleaved_parallel_tool_calls_keep_their_arguments_as_messages() -> None:
    got = run(MessagesToChat().events(None), INTERLEAVED)
    inputs: dict[str, str] = {}
    blocks: dict[int, str] = {}
    for name, data in got:
        if name == "content_block_start":
            blocks[data["index"]] = data["content_block"]["id"]
        elif name == "content_block_delta":
            key = blocks[data["index"]]
            inputs[key] = inputs.get(key, "") + data["delta"]["partial_json"]
    assert {k: orjson.loads(v) for k, v in inputs.items()} == {"a": {"x": 1}, "b": {"y": 2}}
    starts = [n for n, _ in got].count("content_block_start")
    assert starts == [n for n, _ in got].count("content_block_stop") == 2
    assert got[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_interleaved_parallel_tool_calls_keep_their_arguments_as_responses() -> None:
    got = run(ResponsesToChat().events(None), INTERLEAVED)
    final = got[-1][1]["response"]
    assert got[-1][0] == "response.completed"
    assert [(o["call_id"], orjson.loads(o["arguments"])) for o in final["output"]] == [
        ("a", {"x": 1}), ("b", {"y": 2})]
    streamed: dict[int, str] = {}
    for name, data in got:
        if name == "response.function_call_arguments.delta":
            streamed[data["output_index"]] = streamed.get(data["output_index"], "") + data["delta"]
    assert streamed == {0: '{"x": 1}', 1: '{"y": 2}'}


@pytest.mark.parametrize("client", sorted(TRANSLATORS))
def test_nothing_is_translated_after_the_end_marker(client: str) -> None:
    stream = TRANSLATORS[client]().events(None)
    out = stream.feed(sse(delta(content="hi"), delta("stop"), done=True)
                      + sse(delta(content="late"), done=True))
    out += stream.feed(sse(delta(content="later")))
    names = [n for n, _ in named(out + stream.close())]
    last = "message_stop" if client == "messages" else "response.completed"
    assert names[-1] == last and names.count(last) == 1
    assert b"late" not in out


@pytest.mark.parametrize("client", sorted(TRANSLATORS))
def test_an_upstream_error_event_mid_stream_reaches_the_client_as_an_error(client: str) -> None:
    stream = TRANSLATORS[client]().events(None)
    got = run(stream, sse(delta(content="par"), {"error": {"message": "overloaded"}})
              + sse(delta(content="after"), delta("stop"), done=True))
    names = [n for n, _ in got]
    assert names[-1] == "error" and "overloaded" in orjson.dumps(got[-1][1]).decode()
    assert not {"message_stop", "response.completed"} & set(names)
    assert stream.failed and not stream.done


@pytest.mark.parametrize("client", sorted(TRANSLATORS))
def test_a_stream_cut_before_its_end_is_an_error_not_a_complete_answer(client: str) -> None:
    stream = TRANSLATORS[client]().events(None)
    names = [n for n, _ in run(stream, sse(delta(content="half an ans")))]
    assert names[-1] == "error" and stream.failed
    # A finish reason without [DONE] is a whole answer (some servers omit the marker).
    whole = TRANSLATORS[client]().events(None)
    names = [n for n, _ in run(whole, sse(delta(content="all"), delta("stop")))]
    assert names[-1] in ("message_stop", "response.completed") and not whole.failed


@pytest.mark.parametrize("client", sorted(TRANSLATORS))
def test_streams_report_the_instance_model_not_the_one_the_client_sent(client: str) -> None:
    got = run(TRANSLATORS[client]().events("auto"), sse(delta(content="x"), delta("stop"),
                                                        done=True))
    first = got[0][1]
    model = first["message"]["model"] if client == "messages" else first["response"]["model"]
    assert model == "inst-model"


def test_a_responses_stream_holds_at_most_its_limit() -> None:
    stream = ResponsesToChat().events(None, limit=1000)
    stream.feed(sse(*[delta(content="x" * 100) for _ in range(9)]))
    with pytest.raises(UpstreamError, match="max_resp_body_size"):
        stream.feed(sse(delta(content="x" * 200)))
    assert b"error" in stream.error("too large")


def test_held_parallel_tool_calls_are_bounded_too() -> None:
    stream = MessagesToChat().events(None, limit=1000)
    stream.feed(sse(call(0, "{", "a"), call(1, "x" * 900, "b")))
    with pytest.raises(UpstreamError, match="max_resp_body_size"):
        stream.feed(sse(call(1, "x" * 200)))


@pytest.mark.parametrize("client", sorted(TRANSLATORS))
@pytest.mark.parametrize("event", [
    {"choices": "abc"}, {"choices": [{"delta": "abc"}]}, {"choices": [["x"]]},
    {"choices": [{"delta": {"content": 5, "tool_calls": "x"}}]},
    {"choices": [{"delta": {"tool_calls": [{"index": "a", "function": "f"}]}}]},
    {"choices": [], "usage": {"prompt_tokens": "abc", "completion_tokens": -5}},
])
def test_wrong_typed_fields_are_skipped_not_fatal(client: str, event: dict[str, Any]) -> None:
    stream = TRANSLATORS[client]().events(None)
    got = run(stream, sse(event, delta(content="ok"), delta("stop"), done=True))
    assert got[-1][0] in ("message_stop", "response.completed")


def test_counts_no_upstream_can_mean_are_not_read() -> None:
    assert chat_usage({"prompt_tokens": -3, "completion_tokens": 1 << 62}) is None
    assert chat_usage({"prompt_tokens": True, "completion_tokens": 2}).input == 0
    assert anthropic_counts({"input_tokens": -1, "output_tokens": 1 << 62,
                             "cache_read_input_tokens": 4}) == {"cache_read_input_tokens": 4}


@pytest.mark.parametrize("pair", [("messages", "chat"), ("responses", "chat"),
                                  ("chat", "messages")])
@pytest.mark.parametrize("body", [
    {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": -7,
                                                           "completion_tokens": 1 << 62}},
    {"content": [{"type": "text", "text": "x"}], "usage": {"input_tokens": -7,
                                                           "output_tokens": 1 << 62}},
])
def test_absurd_counts_never_reach_a_client_or_the_usage(
        pair: tuple[str, str], body: dict[str, Any]) -> None:
    out, usage = CONVERTERS[pair].answer(orjson.dumps(body))
    assert usage is None
    assert b"-7" not in out and str(1 << 62).encode() not in out


@pytest.mark.parametrize("pair", [("messages", "chat"), ("responses", "chat"),
                                  ("chat", "messages")])
@pytest.mark.parametrize("body", [
    b'{"choices": "abc"}', b'{"choices": [5]}', b'{"choices": [{"message": "x"}]}',
    b'{"content": "abc", "usage": "x"}', b'{"content": [5]}', b'[1, 2]', b'"x"',
])
def test_a_whole_answer_of_the_wrong_shape_is_an_upstream_error(
        pair: tuple[str, str], body: bytes) -> None:
    with contextlib.suppress(UpstreamError):  # 502; anything else would be a 500
        CONVERTERS[pair].answer(body)
