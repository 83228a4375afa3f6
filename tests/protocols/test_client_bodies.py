"""Hostile client bodies get a 400 in their protocol's shape, never a 500 (issue 24's probe)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes import FakeAnthropic

DEEP = b"[" * 300 + b"1" + b"]" * 300


def nested(body: bytes, key: bytes) -> bytes:
    """`body` (a JSON object) with one more field nesting 300 levels deep."""
    return body[:-1] + b', "' + key + b'": ' + DEEP + b"}"


DEEP_BODIES = {
    "/v1/chat/completions": nested(b'{"model": "a", "messages": [{"role": "user", '
                                   b'"content": "hi"}]}', b"x"),
    "/v1/messages": nested(b'{"model": "a", "max_tokens": 5, "messages": [{"role": "user", '
                           b'"content": "hi"}]}', b"metadata"),
    "/v1/responses": nested(b'{"model": "a", "input": "hi"}', b"metadata"),
    "/v1/embeddings": nested(b'{"model": "a", "input": "hi"}', b"extra"),
}


@pytest.mark.parametrize("path", sorted(DEEP_BODIES))
async def test_json_nested_past_the_limit_is_a_400_on_every_protocol(
        gateway: GatewayFactory, http: aiohttp.ClientSession, path: str) -> None:
    gw = await gateway(route_config([instance("a")], uri="/v1/*"))
    async with http.post(f"{gw.url}{path}", data=DEEP_BODIES[path],
                         headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 400
        body = await resp.json()
    message = body["error"]["message"]
    assert "nests deeper than" in message


BAD_BODIES: list[tuple[str, dict[str, Any]]] = [
    ("/v1/responses", {"model": "a", "input": "hi", "tools": 5}),
    ("/v1/responses", {"model": "a", "input": "hi", "tools": {"type": "function"}}),
    ("/v1/chat/completions", {"model": "a", "messages": [{"role": "user", "content": "hi"}],
                              "tools": "abc"}),
    ("/v1/chat/completions", {"model": "a", "messages": [{"role": "user", "content": "hi"}],
                              "tools": [5], "tool_choice": {"function": 3}}),
    ("/v1/chat/completions", {"model": "a", "messages": [
        {"role": "assistant", "content": "x", "tool_calls": [{"function": "f"}]},
        {"role": "user", "content": "hi"}]}),
]


@pytest.mark.parametrize(("path", "body"), BAD_BODIES)
async def test_bodies_no_upstream_protocol_can_take_are_a_400(
        gateway: GatewayFactory, http: aiohttp.ClientSession, path: str,
        body: dict[str, Any]) -> None:
    async with FakeAnthropic("claude") as claude:
        inst = {"name": "c", "provider": "anthropic-messages", "weight": 1,
                "options": {"model": "claude-x"}, "override": {"endpoint": claude.url}}
        gw = await gateway(route_config([inst], uri="/v1/*"))
        async with http.post(f"{gw.url}{path}", json=body) as resp:
            assert resp.status == 400, await resp.text()
            assert (await resp.json())["error"]["type"] == "invalid_request_error"
        assert claude.calls == 0
