"""The admin key cannot read the gateway's environment.

Variables are filled in from the file the operator wrote: a route read and sent
back keeps its references, but a reference that admin input introduces is
refused unless `admin.allow_env` names the variable, with the same words whether
the variable is set or not. Proxy credentials are masked like the others.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeLLM
from tests.server.playground_env import ADMIN_KEY as PLAYGROUND_KEY
from tests.server.playground_env import LABELLED, quickstart_file

from semproxy.admin.run import start
from semproxy.config.loader import load_file
from semproxy.config.masking import MASK
from semproxy.config.source import FileSource

from .conftest import ADMIN_KEY, Served, ServeFactory, with_admin

KEY = {"X-API-KEY": ADMIN_KEY}
SECRET = "gateway-only-s3cret"


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLM]:
    async with FakeLLM("a") as a:
        yield a


@pytest.fixture
async def served(serve_file: ServeFactory, llm: FakeLLM) -> Served:
    return await serve_file(with_admin(route_config([instance("a", llm.url)])))


async def put(http: aiohttp.ClientSession, served: Served, route_id: str, route: Any
              ) -> tuple[int, str]:
    async with http.put(f"{served.admin}/admin/routes/{route_id}", json=route,
                        headers=KEY) as resp:
        return resp.status, await resp.text()


@pytest.mark.parametrize("header", ["Bearer ${GATEWAY_ONLY_VAR}", "$env://GATEWAY_ONLY_VAR",
                                    "Bearer ${GATEWAY_ONLY_VAR:-fallback}"])
async def test_a_put_cannot_name_a_variable_the_operator_did_not_allow(
    served: Served, http: aiohttp.ClientSession, llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch, header: str,
) -> None:
    route = route_config([instance("x", llm.url, auth={"header": {"Authorization": header}})],
                         uri="/v1/x")["routes"][0]
    before = served.path.read_text()
    answers = []
    for is_set in (True, False):
        if is_set:
            monkeypatch.setenv("GATEWAY_ONLY_VAR", SECRET)
        else:
            monkeypatch.delenv("GATEWAY_ONLY_VAR")
        status, text = await put(http, served, "x", route)
        assert status == 400 and SECRET not in text
        answers.append(orjson.loads(text)["error"]["errors"])
    assert answers[0] == answers[1] == [
        "routes[1].plugins.ai-proxy-multi.instances[0].auth.header.Authorization: environment "
        "variable GATEWAY_ONLY_VAR may not be named over the admin API (admin.allow_env lists "
        "those that may)"]
    assert served.path.read_text() == before
    async with http.post(served.url + "/v1/x", json=chat("hi")) as resp:
        assert resp.status == 404
    assert llm.requests == []


async def test_a_route_sent_back_keeps_the_references_the_operator_wrote(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPERATOR_KEY", "operator-s3cret")
    monkeypatch.setenv("OPERATOR_MODEL", "tenant-model")
    served = await serve_file(with_admin(route_config([instance(
        "a", llm.url, auth={"header": {"Authorization": "Bearer ${OPERATOR_KEY}"}},
        options={"model": "${OPERATOR_MODEL}"})])))
    async with http.get(f"{served.admin}/admin/routes/r1", headers=KEY) as resp:
        assert resp.status == 200
        body = await resp.json()
    assert body["route"]["id"] == "r1" and body["route"]["instances"] == ["a"]
    route = body["config"]
    inst = route["plugins"]["ai-proxy-multi"]["instances"][0]
    assert inst["auth"]["header"]["Authorization"] == "Bearer ${OPERATOR_KEY}"
    route["plugins"]["ai-proxy-multi"]["timeout"] = 20000
    status, text = await put(http, served, "r1", route)
    assert status == 200, text
    async with http.post(served.url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
    assert llm.last_request.headers["Authorization"] == "Bearer operator-s3cret"
    assert llm.last_request.json["model"] == "tenant-model"
    assert "${OPERATOR_KEY}" in served.path.read_text()


async def test_an_example_cannot_read_the_environment(
    tmp_path: Path, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EXAMPLE_ORACLE_VAR", SECRET)
    path = quickstart_file(tmp_path)
    before = path.read_text()
    running = await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
    try:
        assert running.admin_url is not None
        async with http.post(f"{running.admin_url}/admin/routes/auto/examples",
                             json={"instance": "code", "examples": ["${EXAMPLE_ORACLE_VAR}"]},
                             headers={"X-API-KEY": PLAYGROUND_KEY}) as resp:
            status, text = resp.status, await resp.text()
        examples = running.gateway.config.routes[0].instances[0].examples
    finally:
        await running.close()
    assert status == 400 and SECRET not in text, text
    assert "${VAR} is filled in only in credentials" in text
    assert path.read_text() == before
    assert SECRET not in examples


PROXY = "http://proxyuser:proxy-s3cret@127.0.0.1:3128"


async def test_proxy_credentials_are_masked_in_the_config_and_the_download(
    tmp_path: Path, http: aiohttp.ClientSession,
) -> None:
    path = quickstart_file(tmp_path)
    path.write_text(path.read_text().replace(
        "        debug_headers: true\n", f"        debug_headers: true\n        proxy: {PROXY}\n"))
    running = await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
    key = {"X-API-KEY": PLAYGROUND_KEY}
    try:
        admin = running.admin_url
        assert admin is not None
        async with http.get(f"{admin}/admin/config", headers=key) as resp:
            shown = await resp.text()
        async with http.post(f"{admin}/admin/routes/auto/calibrate?objective=accuracy",
                             data=LABELLED, headers=key) as resp:
            assert resp.status == 200
            calibrated = await resp.text()
    finally:
        await running.close()
    for text in (shown, calibrated):
        assert "proxy-s3cret" not in text and "proxyuser" not in text
    plugin = orjson.loads(shown)["config"]["routes"][0]["plugins"]["ai-proxy-multi"]
    assert plugin["proxy"] == f"http://{MASK}@127.0.0.1:3128"
    download = yaml.safe_load(orjson.loads(calibrated)["config"]["text"])
    assert download["routes"][0]["plugins"]["ai-proxy-multi"]["proxy"] == \
        f"http://{MASK}@127.0.0.1:3128"
