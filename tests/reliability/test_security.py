"""Secrets stay secret: client credentials never travel upstream, and configured
credentials never show up in logs, metrics, error bodies, the admin API or
`semproxy validate` output. Debug headers and admin paths only where configured."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from tests.conftest import chat
from tests.fakes import FakeEmbeddings, FakeLLM

from semproxy.cli import main

from .conftest import CHAT
from .process import GatewayProcess

UPSTREAM_KEY = "sk-upstream-SECRET-1111"
EMBED_KEY = "emb-SECRET-2222"
ADMIN_KEY = "admin-SECRET-3333"
CONSUMER_KEY = "consumer-SECRET-4444"
QUERY_KEY = "query-SECRET-5555"
SHORT_KEY = "xq7Zp9"
SECRETS = (UPSTREAM_KEY, EMBED_KEY, ADMIN_KEY, CONSUMER_KEY, QUERY_KEY)
CLIENT_CREDENTIALS = ("Bearer client-token-6666", "session=cookie-7777", "client-apikey-8888")
KEYED = "/keyed/v1/chat/completions"


def secret_config(llm: str, embed: str, broken: str) -> dict[str, Any]:
    auth = {"header": {"Authorization": f"Bearer {UPSTREAM_KEY}"}, "query": {"k": QUERY_KEY}}
    embeddings = {"provider": "openai-compatible", "override": {"endpoint": embed},
                  "timeout": 500, "auth": {"header": {"Authorization": f"Bearer {EMBED_KEY}"}}}
    instances = [
        {"name": "main", "provider": "openai-compatible", "weight": 1, "auth": auth,
         "override": {"endpoint": llm}, "examples": ["write a python function"]},
        {"name": "dead", "provider": "openai-compatible", "weight": 1, "auth": auth,
         "override": {"endpoint": broken}, "catchall": True},
    ]
    plugin = {"instances": instances, "embeddings": embeddings,
              "balancer": {"algorithm": "semantic", "threshold": 0.5}}
    return {
        "listen": "127.0.0.1:0",
        "admin": {"listen": "127.0.0.1:0", "key": ADMIN_KEY},
        "consumers": [{"username": "alice", "plugins": {"key-auth": {"key": CONSUMER_KEY}}}],
        "routes": [
            {"id": "open", "uri": CHAT, "plugins": {"ai-proxy-multi": plugin}},
            {"id": "keyed", "uri": KEYED, "plugins": {"ai-proxy-multi": plugin,
                                                       "key-auth": {}}},
        ],
    }


@pytest.fixture
async def upstreams() -> AsyncIterator[tuple[FakeLLM, FakeEmbeddings]]:
    async with FakeLLM("main") as llm, FakeEmbeddings() as embed:
        yield llm, embed


@pytest.fixture
async def secret_gateway(tmp_path: Path, upstreams: tuple[FakeLLM, FakeEmbeddings]
                         ) -> AsyncIterator[GatewayProcess]:
    llm, embed = upstreams
    gw = GatewayProcess(secret_config(llm.url, embed.url, "http://127.0.0.1:9"), tmp_path)
    await gw.astart()
    try:
        yield gw
    finally:
        gw.stop()


async def drive(gw: GatewayProcess, http: aiohttp.ClientSession) -> list[bytes]:
    """Successes, failovers, auth failures, embedding failures; every body returned."""
    client = {"Authorization": CLIENT_CREDENTIALS[0], "Cookie": CLIENT_CREDENTIALS[1],
              "apikey": CLIENT_CREDENTIALS[2]}
    calls: list[tuple[str, str, dict[str, str]]] = [
        (CHAT, "write a python function", client),
        (CHAT, "small talk goes to the dead catchall", client),
        (CHAT, "EMB_500 write a python function", client),
        (CHAT, "write a python function status:500", client),
        (KEYED, "write a python function", {"Authorization": f"Bearer {CONSUMER_KEY}",
                                            "Cookie": CLIENT_CREDENTIALS[1]}),
        (KEYED, "hi", {"Authorization": "Bearer wrong-key-9999"}),
        (KEYED, "hi", {}),
    ]
    bodies = []
    for path, text, headers in calls:
        async with http.post(gw.url + path, json=chat(text), headers=headers) as resp:
            bodies.append(await resp.read())
    for path in ("/admin/config", "/metrics", "/admin/routes"):
        async with http.get(gw.admin_url + path, headers={"X-API-KEY": ADMIN_KEY}) as resp:
            assert resp.status == 200
            bodies.append(await resp.read())
    assert re.search(rb"^semproxy_event_loop_tasks \d", bodies[-2], re.M)  # the soak reads it
    return bodies


async def test_client_credentials_never_reach_the_upstream_or_the_embeddings_server(
    secret_gateway: GatewayProcess, upstreams: tuple[FakeLLM, FakeEmbeddings]
) -> None:
    async with aiohttp.ClientSession() as http:
        await drive(secret_gateway, http)
    llm, embed = upstreams
    assert llm.posts and embed.posts
    for rec in llm.posts + embed.posts:
        seen = rec.text + repr(list(rec.headers.items())) + repr(rec.query)
        assert not [c for c in (*CLIENT_CREDENTIALS, CONSUMER_KEY) if c.split("=")[-1] in seen]
        assert "Cookie" not in rec.headers
    assert {r.headers["Authorization"] for r in llm.posts} == {f"Bearer {UPSTREAM_KEY}"}
    assert {r.query.get("k") for r in llm.posts} == {QUERY_KEY}
    assert {r.headers["Authorization"] for r in embed.posts} == {f"Bearer {EMBED_KEY}"}


async def test_secrets_appear_in_no_log_metric_error_body_or_admin_answer(
    secret_gateway: GatewayProcess
) -> None:
    async with aiohttp.ClientSession() as http:
        bodies = await drive(secret_gateway, http)
    secret_gateway.stop()
    logs = secret_gateway.logs()
    assert '"logger":"semproxy.access"' in logs  # the access log did run
    for text in (logs, *(b.decode() for b in bodies)):
        assert not [s for s in SECRETS if s in text]


async def test_the_admin_api_wants_the_key_and_is_not_on_the_public_listener(
    secret_gateway: GatewayProcess
) -> None:
    async with aiohttp.ClientSession() as http:
        for headers in ({}, {"X-API-KEY": "wrong"}, {"X-API-KEY": ADMIN_KEY[:-1]},
                        {"X-API-KEY": ADMIN_KEY + "x"}, {"Authorization": f"Bearer {ADMIN_KEY}"}):
            for path in ("/admin/config", "/admin/routes", "/metrics"):
                async with http.get(secret_gateway.admin_url + path, headers=headers) as resp:
                    assert resp.status == 401
                    assert "error" in await resp.json()
        for path in ("/admin/config", "/admin/routes", "/metrics"):
            async with http.get(secret_gateway.url + path,
                                headers={"X-API-KEY": ADMIN_KEY}) as resp:
                assert resp.status in (404, 405)
                assert ADMIN_KEY not in await resp.text()


async def test_debug_headers_only_when_the_route_asks(
    secret_gateway: GatewayProcess
) -> None:
    async with aiohttp.ClientSession() as http, \
            http.post(secret_gateway.url + CHAT, json=chat("write a python function")) as resp:
        assert resp.status == 200
        assert not [h for h in resp.headers if h.lower().startswith("x-ai-")]


def validate_output(tmp_path: Path, config: dict[str, Any]) -> tuple[int, str]:
    path = tmp_path / "c.json"
    path.write_bytes(orjson.dumps(config))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["--log-format", "text", "validate", str(path)])
    return code, out.getvalue()


def broken_next_to_secrets(kind: str) -> dict[str, Any]:
    config = secret_config("http://a", "http://b", "http://c")
    multi = config["routes"][0]["plugins"]["ai-proxy-multi"]
    main_instance = multi["instances"][0]
    if kind == "weight":
        main_instance["weight"] = -1
    elif kind == "auth type":
        main_instance["auth"]["header"]["X-Extra"] = 5
    elif kind == "header name":  # a header line pasted as the name
        main_instance["auth"]["header"][f"Authorization: Bearer {UPSTREAM_KEY}"] = ""
    elif kind == "short consumer key":
        config["consumers"][0]["plugins"]["key-auth"]["key"] = SHORT_KEY
    elif kind == "unknown field":
        config["admin"]["secret"] = ADMIN_KEY
    elif kind == "embeddings":
        multi["embeddings"]["timeout"] = EMBED_KEY
    return config


@pytest.mark.parametrize("kind", ["valid", "weight", "auth type", "header name",
                                  "short consumer key", "unknown field", "embeddings"])
def test_validate_never_prints_a_secret(tmp_path: Path, kind: str) -> None:
    code, output = validate_output(tmp_path, broken_next_to_secrets(kind))
    assert code == (0 if kind == "valid" else 1), output
    assert not [s for s in SECRETS if s in output], output
    assert SHORT_KEY not in output
