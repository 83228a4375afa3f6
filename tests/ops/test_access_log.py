"""One JSON access-log line per request, request ids end to end, and no secret in any log."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from tests.conftest import chat, instance
from tests.fakes import FakeEmbeddings, FakeLLM

from semproxy.observability.logging import JsonFormatter

from .conftest import ADMIN_KEY, UPSTREAM_SECRET, ServeFactory, with_admin

CONSUMER_KEY = "consumer-key-SECRET-456"


@pytest.fixture
async def llms() -> AsyncIterator[tuple[FakeLLM, FakeLLM, FakeEmbeddings]]:
    async with FakeLLM("a") as a, FakeLLM("b") as b, FakeEmbeddings() as embed:
        yield a, b, embed


def config(a: FakeLLM, b: FakeLLM, embed: FakeEmbeddings, **logging_: bool) -> dict[str, Any]:
    auth = {"header": {"Authorization": UPSTREAM_SECRET}}
    plugin = {"instances": [instance("a", a.url, auth=auth, priority=1),
                            instance("b", b.url, auth=auth)],
              "fallback_strategy": "http_5xx", "logging": logging_}
    semantic = {
        "instances": [instance("a", a.url, auth=auth),
                      instance("b", b.url, auth=auth, examples=["write a python function"])],
        "balancer": {"algorithm": "semantic", "threshold": 0.5},
        "embeddings": {"provider": "openai-compatible", "override": {"endpoint": embed.url},
                       "auth": auth}}
    return with_admin({
        "listen": "127.0.0.1:0",
        "consumers": [{"username": "alice", "plugins": {"key-auth": {"key": CONSUMER_KEY}}}],
        "routes": [
            {"id": "rr", "uri": "/v1/chat/completions",
             "plugins": {"ai-proxy-multi": plugin}},
            {"id": "sem", "uri": "/v1/semantic", "plugins": {"ai-proxy-multi": semantic}},
            {"id": "keyed", "uri": "/v1/keyed",
             "plugins": {"ai-proxy-multi": {"instances": [instance("a", a.url, auth=auth)]},
                         "key-auth": {}}},
        ]})


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The access records as the JSON formatter writes them."""
    fmt = JsonFormatter()
    return [json.loads(fmt.format(r)) for r in caplog.records if r.name == "semproxy.access"]


def everything_logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every record raw (message, arguments, extra fields), before any redaction."""
    return "\n".join(f"{r.getMessage()} {r.args} {getattr(r, 'fields', '')} {r.exc_text}"
                     for r in caplog.records)


async def test_access_line_has_the_request_story_and_no_secret(
    serve_file: ServeFactory, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture,
    llms: tuple[FakeLLM, FakeLLM, FakeEmbeddings],
) -> None:
    caplog.set_level(logging.INFO)
    a, b, embed = llms
    served = await serve_file(config(a, b, embed))
    a.fail_next = [503]  # a has the higher priority: tried first, fails over to b
    async with http.post(f"{served.url}/v1/chat/completions", json=chat("hi", model="gpt-x"),
                         headers={"X-Request-Id": "req-42"}) as resp:
        assert resp.status == 200
    stream = chat("python function", stream=True, stream_options={"include_usage": True})
    async with http.post(f"{served.url}/v1/semantic", json=stream) as resp:
        await resp.read()
    for key in (CONSUMER_KEY, "wrong-key-SECRET-789"):
        async with http.post(f"{served.url}/v1/keyed", json=chat("hi"),
                             headers={"Authorization": f"Bearer {key}"}) as resp:
            assert resp.status == (200 if key == CONSUMER_KEY else 401)

    failover, semantic, keyed, refused = access_lines(caplog)
    assert failover["request_id"] == "req-42"
    assert failover["route"] == "rr" and failover["status"] == 200
    assert failover["instance"] == "b" and failover["model"] == "gpt-x"  # as the client wrote it
    assert failover["failover"] == ["a:http_503", "b:ok"]
    assert failover["latency_ms"] > 0 and failover["ttft_ms"] is None
    assert failover["tokens"]["total"] > 0
    assert "request_body" not in failover

    assert semantic["route"] == "sem" and semantic["instance"] == "b"
    assert semantic["semantic"]["pick"] == "b" and semantic["semantic"]["reason"] == "matched"
    assert semantic["semantic"]["top_score"] > 0.5
    assert semantic["ttft_ms"] > 0 and semantic["tokens"]["completion"] > 0

    assert keyed["consumer"] == "alice" and keyed["status"] == 200
    assert refused["status"] == 401 and refused["consumer"] is None

    logged = everything_logged(caplog)
    for secret in ("sk-SECRET-123", CONSUMER_KEY, "wrong-key-SECRET-789", ADMIN_KEY):
        assert secret not in logged
    async with http.get(f"{served.admin}/admin/config",
                        headers={"X-API-KEY": ADMIN_KEY}) as resp:
        shown = await resp.text()
    for secret in ("sk-SECRET-123", CONSUMER_KEY, ADMIN_KEY):
        assert secret not in shown


async def test_payloads_add_bodies_only_when_asked(
    serve_file: ServeFactory, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture,
    llms: tuple[FakeLLM, FakeLLM, FakeEmbeddings],
) -> None:
    caplog.set_level(logging.INFO)
    served = await serve_file(config(*llms, payloads=True))
    async with http.post(f"{served.url}/v1/chat/completions",
                         json=chat("tell me a story")) as resp:
        answer = await resp.json()
    async with http.post(f"{served.url}/v1/keyed", json=chat("no bodies here"),
                         headers={"apikey": CONSUMER_KEY}) as resp:
        assert resp.status == 200
    logged, quiet = access_lines(caplog)
    assert json.loads(logged["request_body"])["messages"][0]["content"] == "tell me a story"
    assert json.loads(logged["response_body"])["id"] == answer["id"]
    assert "request_body" not in quiet and "response_body" not in quiet
    assert "sk-SECRET-123" not in everything_logged(caplog)


async def test_summaries_route_logs_even_with_the_access_log_off(
    serve_file: ServeFactory, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture,
    llms: tuple[FakeLLM, FakeLLM, FakeEmbeddings],
) -> None:
    caplog.set_level(logging.INFO)
    served = await serve_file(config(*llms, summaries=True))
    access = logging.getLogger("semproxy.access")
    access.setLevel(logging.WARNING)  # what `serve --no-access-log` does
    try:
        async with http.post(f"{served.url}/v1/chat/completions", json=chat("hi")) as resp:
            assert resp.status == 200
        async with http.post(f"{served.url}/v1/keyed", json=chat("hi"),
                             headers={"apikey": CONSUMER_KEY}) as resp:
            assert resp.status == 200
    finally:
        access.setLevel(logging.NOTSET)
    assert [line["route"] for line in access_lines(caplog)] == ["rr"]


async def test_request_id_is_passed_upstream_and_returned(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
    llms: tuple[FakeLLM, FakeLLM, FakeEmbeddings],
) -> None:
    a, b, embed = llms
    served = await serve_file(config(a, b, embed))
    async with http.post(f"{served.url}/v1/keyed", json=chat("hi"),
                         headers={"X-Request-Id": "client-id-1", "apikey": CONSUMER_KEY}) as resp:
        assert resp.headers["X-Request-Id"] == "client-id-1"
    assert a.last_request.headers["X-Request-Id"] == "client-id-1"
    async with http.post(f"{served.url}/v1/keyed", json=chat("hi"),
                         headers={"apikey": CONSUMER_KEY}) as resp:
        generated = resp.headers["X-Request-Id"]
    assert len(generated) == 32 and a.last_request.headers["X-Request-Id"] == generated
    async with http.post(f"{served.url}/v1/keyed", json=chat("hi"),
                         headers={"X-Request-Id": "refused-1"}) as resp:
        assert resp.status == 401 and resp.headers["X-Request-Id"] == "refused-1"
    # The client's own credentials never travel upstream.
    assert CONSUMER_KEY not in str(a.last_request.headers)
