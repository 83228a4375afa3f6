"""Hostile headers: oversized, CR/LF and control characters, forged debug headers."""

from __future__ import annotations

import re

import aiohttp
import orjson
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway

from .conftest import CHAT, semantic_route
from .rawhttp import chat_head, exchange

BODY = orjson.dumps(chat("write a python function"))
FRESH_ID = re.compile(r"^[0-9a-f]{32}$")
FORGED = {"X-AI-Semantic-Route": "translate", "X-AI-Semantic-Scores": "translate:1.0",
          "X-AI-Semantic-Picked-Instance": "translate", "X-AI-Semantic-Reason": "forged",
          "X-AI-Instance": "translate", "X-AI-Failover": "a>b"}


@pytest.fixture
async def semantic_gw(gateway: GatewayFactory) -> RunningGateway:
    return await gateway({"listen": "127.0.0.1:0", "routes": [semantic_route()]})


async def still_serves(gw: RunningGateway) -> None:
    status, _, _ = await exchange(gw.url, chat_head(CHAT, BODY), BODY)
    assert status == 200


@pytest.mark.parametrize("extra", [
    b"X-Big: " + b"a" * 100_000,
    b"\r\n".join(b"X-H%d: v" % i for i in range(20_000)),
    b"X-Request-Id: " + b"r" * 70_000,
])
async def test_oversized_headers_are_refused_and_the_worker_keeps_serving(
    semantic_gw: RunningGateway, extra: bytes
) -> None:
    status, _, _ = await exchange(semantic_gw.url, chat_head(CHAT, BODY, extra), BODY)
    assert status in (400, 431)
    await still_serves(semantic_gw)


@pytest.mark.parametrize("value", [b"abc\rX-Injected: 1", b"abc\nX-Injected: 1", b"a\x00b"])
async def test_cr_lf_or_nul_inside_a_header_value_is_refused(
    semantic_gw: RunningGateway, value: bytes
) -> None:
    status, headers, _ = await exchange(
        semantic_gw.url, chat_head(CHAT, BODY, b"X-Request-Id: " + value), BODY)
    assert "x-injected" not in headers
    assert status == 400 or (status == 200 and FRESH_ID.match(headers["x-request-id"]))
    await still_serves(semantic_gw)


@pytest.mark.parametrize("given", [
    b"r" * 129, b"tab\there", b"caf\xc3\xa9", b"bell\x07", b"del\x7f", b" ",
])
async def test_unsafe_or_overlong_request_ids_are_replaced(
    semantic_gw: RunningGateway, given: bytes
) -> None:
    """Served with an id of the gateway's own, or (control characters the HTTP
    parser already rejects) refused with 400; the given id never comes back."""
    status, headers, _ = await exchange(
        semantic_gw.url, chat_head(CHAT, BODY, b"X-Request-Id: " + given), BODY)
    assert status in (200, 400)
    if status == 200:
        assert FRESH_ID.match(headers["x-request-id"])
    else:
        assert headers.get("x-request-id", "").encode() != given


async def test_a_sane_request_id_is_echoed(semantic_gw: RunningGateway) -> None:
    rid = b"trace-0123_abc.XYZ:42/" + b"x" * 100
    _, headers, _ = await exchange(
        semantic_gw.url, chat_head(CHAT, BODY, b"X-Request-Id: " + rid), BODY)
    assert headers["x-request-id"] == rid.decode()


async def test_forged_debug_headers_are_neither_reflected_nor_trusted(
    semantic_gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async with http.post(semantic_gw.url + CHAT, json=chat("write a python function"),
                         headers=FORGED) as resp:
        body = await resp.json()
        assert resp.headers["X-AI-Semantic-Route"] == "code"
        assert resp.headers["X-AI-Instance"] == "code"
        assert "forged" not in resp.headers.get("X-AI-Semantic-Reason", "")
        assert "X-AI-Failover" not in resp.headers
        assert body["model"] == "code-model"


async def test_forged_debug_headers_do_not_reach_the_upstream_or_come_back(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    async with FakeLLM("up") as llm:
        gw = await gateway(route_config([instance("up", llm.url)]))
        async with http.post(gw.url + CHAT, json=chat("hi"), headers=FORGED) as resp:
            assert resp.status == 200
            assert not [h for h in resp.headers if h.lower().startswith("x-ai-")]
        sent = llm.last_request.headers
        assert not [h for h in sent if h.lower().startswith("x-ai-")]
