"""Broken and hostile request bodies against a real gateway process.

Every body is answered: served (200) or refused with a 4xx in the OpenAI error
shape. Never a 5xx, a traceback, a hang or a dead worker.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import BODY_LIMIT, CHAT, RELAY, assert_clean, assert_healthy, post
from .process import GatewayProcess


def user(content: Any, role: Any = "user") -> bytes:
    return orjson.dumps({"model": "auto", "messages": [{"role": role, "content": content}]})


def nested(depth: int) -> bytes:
    return b'{"messages":[{"role":"user","content":' + b"[" * depth + b"]" * depth + b"}]}"


NAMED: dict[str, tuple[bytes, int]] = {
    "empty body": (b"", 400),
    "not json": (b"hello there", 400),
    "json array": (b"[1, 2, 3]", 400),
    "json string": (b'"messages"', 400),
    "json null": (b"null", 400),
    "messages missing": (b'{"model": "auto"}', 400),
    "messages a string": (b'{"messages": "hi"}', 400),
    "messages an object": (b'{"messages": {"role": "user"}}', 400),
    "messages empty": (b'{"messages": []}', 400),
    "message null": (b'{"messages": [null]}', 400),
    "role missing": (b'{"messages": [{"content": "hi"}]}', 400),
    "role a number": (user("hi", role=7), 400),
    "role an object": (user("hi", role={"x": 1}), 400),
    "role unknown": (user("hi", role="wizard"), 200),
    "content a number": (user(42), 200),
    "content null": (user(None), 200),
    "content an object": (user({"text": "write a python function"}), 200),
    "content parts with junk": (user([1, None, {"text": 5}, {"type": "text"}, "x"]), 200),
    "content 100,000 parts": (user([{"type": "text", "text": "code"}] * 100_000), 200),
    "nesting 100 deep": (nested(100), 200),
    "nesting 200 deep": (nested(200), 400),
    "nesting 5,000 deep": (nested(5000), 400),
    "invalid utf-8": (b'{"messages": [{"role": "user", "content": "\xff\xfe\xc3"}]}', 400),
    "lone surrogate escape": (b'{"messages": [{"role": "user", "content": "\\ud800"}]}', 400),
    "duplicate keys": (b'{"messages": 1, "messages": [{"role": "user", "content": "a"}]}', 200),
    "NaN literal": (b'{"messages": [{"role": "user", "content": "a"}], "top_p": NaN}', 400),
    "Infinity literal": (b'{"messages": [{"role": "user", "content": "a"}], "n": Infinity}', 400),
    "huge number": (b'{"messages": [{"role": "user", "content": "a"}], "n": 1' + b"0" * 400
                    + b"}", 400),
    "trailing garbage": (user("hi") + b"}}", 400),
    "nul bytes": (user("a\x00b"), 200),
    "10 MB string, under the limit": (user("a" * (10 * 1024 * 1024)), 200),
    "13 MB string, over the limit": (user("a" * (13 * 1024 * 1024)), 413),
}


@pytest.mark.parametrize("path", [CHAT, RELAY])
@pytest.mark.parametrize("case", list(NAMED))
def test_named_hostile_body_gets_the_expected_answer(
    hostile_gateway: GatewayProcess, case: str, path: str
) -> None:
    body, status = NAMED[case]
    reply = post(hostile_gateway.url, path, body)
    assert_clean(reply)
    assert reply.status == status, (case, reply.body[:300])


def test_no_named_case_hurt_the_worker(hostile_gateway: GatewayProcess) -> None:
    for body, _ in NAMED.values():
        post(hostile_gateway.url, CHAT, body)
    assert_healthy(hostile_gateway)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=5),
    max_leaves=30,
)
roles = st.sampled_from(["user", "system", "assistant", "tool", "developer", ""]) | json_values
parts = st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]) | json_values,
                               "text": json_values | st.text()})
contents = st.text() | json_values | st.lists(parts | json_values, max_size=6)
messages = st.lists(st.fixed_dictionaries({"role": roles, "content": contents})
                    | json_values, max_size=4)
documents = st.fixed_dictionaries(
    {"messages": messages | json_values},
    optional={"model": json_values, "stream": json_values, "temperature": json_values},
)
PROPERTY = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@PROPERTY
@given(doc=documents, path=st.sampled_from([CHAT, RELAY]))
def test_any_chat_shaped_document_is_served_or_refused_cleanly(
    hostile_gateway: GatewayProcess, doc: dict[str, Any], path: str
) -> None:
    # stdlib json: it writes integers of any size, which orjson refuses to encode
    assert_clean(post(hostile_gateway.url, path, json.dumps(doc).encode()))


@PROPERTY
@given(raw=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_bytes_are_refused_cleanly(
    hostile_gateway: GatewayProcess, raw: bytes
) -> None:
    assert_clean(post(hostile_gateway.url, CHAT, raw))


def test_property_runs_left_the_worker_healthy(hostile_gateway: GatewayProcess) -> None:
    assert_healthy(hostile_gateway)
    assert post(hostile_gateway.url, CHAT, user("write a python function")).status == 200


def test_body_limit_is_the_one_the_route_sets() -> None:
    assert 10 * 1024 * 1024 < BODY_LIMIT < 13 * 1024 * 1024
