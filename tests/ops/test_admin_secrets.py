"""Secrets and the admin API: every credential masked wherever the config is shown, masks
sent back keep the stored value, and `${VAR}` filled in only where credentials go."""

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
from tests.server.playground_env import LABELLED, start_playground

from semproxy.config.loader import load_data
from semproxy.config.masking import MASK, mask_secrets, mask_text

from .conftest import ADMIN_KEY, UPSTREAM_SECRET, Served, ServeFactory, eventually, with_admin

KEY = {"X-API-KEY": ADMIN_KEY}
PROBE_SECRET = "probe-s3cret"
QUERY_SECRET = "q-s3cret"
USER_SECRET = "u-s3cret"
CONSUMER_KEY = "consumer-s3cret-key"


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLM]:
    async with FakeLLM("a") as a:
        yield a


def secret_laden(url: str) -> dict[str, Any]:
    inst = instance("a", f"{url}/?apikey={QUERY_SECRET}",
                    auth={"header": {"Authorization": UPSTREAM_SECRET}},
                    checks={"active": {"req_headers": [f"Authorization: Bearer {PROBE_SECRET}"],
                                       "http_path": f"/health?token={QUERY_SECRET}"}})
    config = with_admin(route_config([inst]))
    config["routes"].append({
        "id": "emb", "uri": "/v1/emb", "plugins": {"ai-proxy-multi": {
            "balancer": {"algorithm": "semantic"},
            "embeddings": {"provider": "openai-compatible", "override": {
                "endpoint": f"http://user:{USER_SECRET}@127.0.0.1:9/v1?key={QUERY_SECRET}"}},
            "instances": [instance("x"), instance("y", examples=["hello"])]}}})
    config["consumers"] = [{"username": "c", "plugins": {"key-auth": {"key": CONSUMER_KEY}}}]
    return config


def assert_no_secret(text: str) -> None:
    for secret in (UPSTREAM_SECRET, PROBE_SECRET, QUERY_SECRET, USER_SECRET, CONSUMER_KEY,
                   ADMIN_KEY, "sk-SECRET"):
        assert secret not in text, secret


async def test_get_config_masks_every_credential(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llm: FakeLLM,
) -> None:
    served = await serve_file(secret_laden(llm.url))
    async with http.get(served.admin + "/admin/config", headers=KEY) as resp:
        assert resp.status == 200
        text = await resp.text()
    assert_no_secret(text)
    config = orjson.loads(text)["config"]
    inst = config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]
    assert inst["checks"]["active"]["req_headers"] == [f"Authorization: {MASK}"]
    assert inst["checks"]["active"]["http_path"] == f"/health?token={MASK}"
    assert inst["override"]["endpoint"] == f"{llm.url}/?apikey={MASK}"
    emb = config["routes"][1]["plugins"]["ai-proxy-multi"]["embeddings"]["override"]
    assert emb["endpoint"] == f"http://{MASK}@127.0.0.1:9/v1?key={MASK}"
    assert config["consumers"][0]["plugins"]["key-auth"]["key"] == MASK


def test_a_reference_to_the_environment_is_shown_as_written() -> None:
    doc = {"auth": {"header": {"Authorization": "Bearer ${KEY}", "x-api-key": "$env://K/a",
                               "x-literal": "Bearer sk-1 ${KEY}"}}}
    assert mask_secrets(doc)["auth"]["header"] == {
        "Authorization": "Bearer ${KEY}", "x-api-key": "$env://K/a", "x-literal": MASK}


def test_a_masked_text_keeps_comments_and_masks_in_place() -> None:
    text = ("# my gateway\nadmin: {listen: '127.0.0.1:9180', key: hunter2-admin}  # key!\n"
            "consumers:\n  - username: c\n    plugins:\n      key-auth:\n        key: 12345678\n")
    masked = mask_text(text)
    assert masked.startswith("# my gateway\n") and "# key!" in masked
    assert "hunter2" not in masked and "12345678" not in masked
    assert yaml.safe_load(masked)["admin"] == {"listen": "127.0.0.1:9180", "key": MASK}


async def test_calibrate_returns_the_route_and_the_file_with_credentials_masked(
    tmp_path: Path, http: aiohttp.ClientSession,
) -> None:
    gw = await start_playground(tmp_path)
    try:
        assert gw.admin_url is not None
        url = gw.admin_url + "/admin/routes/auto/calibrate?objective=accuracy&holdout=0"
        async with http.post(url, data=LABELLED, headers={"X-API-KEY": PLAYGROUND_KEY}) as resp:
            assert resp.status == 200
            text = await resp.text()
        assert PLAYGROUND_KEY not in text
        body = orjson.loads(text)
        assert yaml.safe_load(body["config"]["text"])["admin"]["key"] == MASK
    finally:
        await gw.close()


async def test_a_put_that_sends_masks_back_keeps_the_stored_credentials(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llm: FakeLLM,
) -> None:
    served = await serve_file(secret_laden(llm.url))
    async with http.get(served.admin + "/admin/config", headers=KEY) as resp:
        route = (await resp.json())["config"]["routes"][0]
    route["plugins"]["ai-proxy-multi"]["timeout"] = 12345  # the edit
    async with http.put(served.admin + "/admin/routes/r1", json=route, headers=KEY) as resp:
        assert resp.status == 200, await resp.text()
        assert_no_secret(await resp.text())
    (r1,) = [r for r in served.running.gateway.config.routes if r.id == "r1"]
    assert r1.instances[0].target.net.timeout_s == 12.345
    async with http.post(served.url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
    assert llm.last_request.headers["Authorization"] == UPSTREAM_SECRET
    assert llm.last_request.query == {"apikey": QUERY_SECRET}
    on_disk = served.path.read_text()
    assert MASK not in on_disk and PROBE_SECRET in on_disk


async def test_a_mask_that_stands_for_nothing_is_refused(
    served_plain: Served, http: aiohttp.ClientSession, llm: FakeLLM,
) -> None:
    route = route_config([instance("new", llm.url, auth={"header": {"Authorization": MASK}})]
                         )["routes"][0]
    async with http.put(served_plain.admin + "/admin/routes/new", json=route,
                        headers=KEY) as resp:
        assert resp.status == 400
        errors = (await resp.json())["error"]["errors"]
    assert errors == [f"routes[1].plugins.ai-proxy-multi.instances[0].auth.header."
                      f"Authorization: {MASK} stands for a stored credential, but there is "
                      "none here; give the value"]


@pytest.fixture
async def served_plain(serve_file: ServeFactory, llm: FakeLLM) -> Served:
    return await serve_file(with_admin(route_config([instance("a", llm.url)])))


async def test_a_put_cannot_read_the_environment_outside_credentials(
    served_plain: Served, http: aiohttp.ClientSession, llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GATEWAY_ONLY_SECRET", "env-s3cret-value")
    route = route_config([instance("x", llm.url, options={"model": "${GATEWAY_ONLY_SECRET}"})]
                         )["routes"][0]
    async with http.put(served_plain.admin + "/admin/routes/x", json=route,
                        headers=KEY) as resp:
        assert resp.status == 400
        text = await resp.text()
    assert "env-s3cret-value" not in text
    assert orjson.loads(text)["error"]["errors"] == [
        "routes[1].plugins.ai-proxy-multi.instances[0].options.model: ${VAR} is filled in "
        "only in credentials (auth.header.*, auth.query.*, admin.key, "
        "consumers[].plugins.key-auth.key, checks.active.req_headers[]) when sent over the "
        "admin API"]
    async with http.get(served_plain.admin + "/admin/config", headers=KEY) as resp:
        assert "env-s3cret-value" not in await resp.text()


@pytest.fixture
async def served_allowing(serve_file: ServeFactory, llm: FakeLLM) -> Served:
    """A gateway whose operator lets admin writes name UPSTREAM_KEY_FOR_X."""
    config = with_admin(route_config([instance("a", llm.url)]))
    config["admin"]["allow_env"] = ["UPSTREAM_KEY_FOR_X"]
    return await serve_file(config)


async def test_a_put_fills_in_a_variable_where_a_credential_goes_and_never_echoes_it(
    served_allowing: Served, http: aiohttp.ClientSession, llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    served_plain = served_allowing  # admin.allow_env names the variable
    monkeypatch.setenv("UPSTREAM_KEY_FOR_X", "env-s3cret-value")
    route = route_config([instance("x", llm.url, auth={
        "header": {"Authorization": "Bearer ${UPSTREAM_KEY_FOR_X}"}})], uri="/v1/x")["routes"][0]
    async with http.put(served_plain.admin + "/admin/routes/x", json=route,
                        headers=KEY) as resp:
        assert resp.status == 200
        assert "env-s3cret-value" not in await resp.text()
    async with http.post(served_plain.url + "/v1/x", json=chat("hi")) as resp:
        assert resp.status == 200
    assert llm.last_request.headers["Authorization"] == "Bearer env-s3cret-value"
    async with http.get(served_plain.admin + "/admin/config", headers=KEY) as resp:
        assert "env-s3cret-value" not in await resp.text()
    # The file keeps the reference, not the value.
    assert "${UPSTREAM_KEY_FOR_X}" in served_plain.path.read_text()


async def test_the_public_version_is_not_a_function_of_any_secret(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llm: FakeLLM,
) -> None:
    served = await serve_file(secret_laden(llm.url))
    async with http.get(served.url + "/healthz") as resp:
        version = (await resp.json())["version"]
    # Every secret different: same public version, so nothing to test guesses against.
    rotated = secret_laden(llm.url)
    rotated["admin"]["key"] = "1234"
    inst = rotated["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]
    inst["auth"]["header"]["Authorization"] = "Bearer sk-ROTATED"
    rotated["consumers"][0]["plugins"]["key-auth"]["key"] = "another-consumer-key"
    assert load_data(rotated, {}).version == version
    # ... but a rotated secret is still a new version to apply.
    served.rewrite(rotated)
    watcher = served.running.watcher
    assert watcher is not None
    await eventually(lambda: watcher.status.applied == 1, within=2.0)
    async with http.post(served.url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
    assert llm.last_request.headers["Authorization"] == "Bearer sk-ROTATED"


async def test_get_config_shows_values_from_the_environment_as_written(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEPLOYMENT_NAME", "tenant-7-s3cret-deployment")
    served = await serve_file(with_admin(route_config(
        [instance("a", llm.url, options={"model": "${DEPLOYMENT_NAME}"})])))
    assert served.running.gateway.config.routes[0].instances[0].options["model"] \
        == "tenant-7-s3cret-deployment"
    async with http.get(served.admin + "/admin/config", headers=KEY) as resp:
        text = await resp.text()
    assert "s3cret" not in text
    inst = orjson.loads(text)["config"]["routes"][0]["plugins"]["ai-proxy-multi"]["instances"]
    assert inst[0]["options"]["model"] == "${DEPLOYMENT_NAME}"
    assert inst[0]["priority"] == 0  # defaults are still filled in
