"""Configs and a blocking HTTP client for the reliability tests.

Property-based tests (hypothesis) run as plain functions against a gateway in
its own process, so every example is one real HTTP exchange on a loopback socket.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from .process import GatewayProcess, free_port

CHAT = "/v1/chat/completions"
RELAY = "/relay/v1/chat/completions"
BODY_LIMIT = 12 * 1024 * 1024


def echo(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "provider": "echo", "weight": 1,
            "options": {"model": f"{name}-model"}, **fields}


def semantic_route(route_id: str = "auto", uri: str = CHAT, **plugin: Any) -> dict[str, Any]:
    """Semantic routing with the in-process model over three echo instances."""
    return {"id": route_id, "uri": uri, "plugins": {"ai-proxy-multi": {
        "balancer": {"algorithm": "semantic", "threshold": 0.5, "expose_scores": True},
        "embeddings": {"provider": "local"},
        "debug_headers": True,
        "instances": [
            echo("code", examples=["write a python function", "fix the bug in my code"]),
            echo("translate", examples=["translate this sentence into french"]),
            echo("default", catchall=True),
        ], **plugin}}}


def hostile_config(port: int) -> dict[str, Any]:
    """A semantic route, and a route whose upstream is this gateway's own echo route,
    so a body also goes through a real provider's serialisation and HTTP call."""
    relay = {"name": "relay", "provider": "openai-compatible", "weight": 1,
             "override": {"endpoint": f"http://127.0.0.1:{port}/echo/v1/chat/completions"}}
    return {"listen": f"127.0.0.1:{port}", "routes": [
        semantic_route(max_req_body_size=BODY_LIMIT),
        {"id": "relay", "uri": RELAY, "plugins": {"ai-proxy-multi": {
            "instances": [relay], "max_req_body_size": BODY_LIMIT}}},
        {"id": "echo", "uri": "/echo/v1/chat/completions", "plugins": {"ai-proxy-multi": {
            "instances": [echo("echo")], "max_req_body_size": BODY_LIMIT}}},
    ]}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


def post(base: str, path: str, body: bytes, headers: dict[str, str] | None = None,
         timeout: float = 30.0) -> Reply:
    """One POST with exactly these bytes (no client-side JSON encoding)."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def assert_clean(reply: Reply, allowed: frozenset[int] = frozenset({200, 400, 413})) -> None:
    """Served, or refused with a 4xx in the OpenAI error shape; never a 5xx."""
    assert reply.status in allowed, (reply.status, reply.body[:300])
    payload = reply.json()
    if reply.status >= 400:
        error = payload["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert "Traceback" not in error["message"]
    else:
        assert payload["object"] == "chat.completion"


def assert_healthy(gw: GatewayProcess) -> None:
    """The worker is still up and never logged an unhandled error."""
    assert gw.is_alive()
    logs = gw.logs()
    assert "Traceback" not in logs and "unhandled error" not in logs, logs[-2000:]


@pytest.fixture(scope="module")
def hostile_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    workdir: Path = tmp_path_factory.mktemp("hostile")
    port = free_port()
    with GatewayProcess(hostile_config(port), workdir, listen=f"127.0.0.1:{port}") as gw:
        yield gw
