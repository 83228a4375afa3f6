"""The admin API: keyed, masked, validated with field paths, persisted to the config file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import yaml
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeEmbeddings, FakeLLM

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError

from .conftest import ADMIN_KEY, UPSTREAM_SECRET, Served, ServeFactory, run_cli, with_admin

KEY = {"X-API-KEY": ADMIN_KEY}


@pytest.fixture
async def llms() -> AsyncIterator[tuple[FakeLLM, FakeLLM]]:
    async with FakeLLM("a") as a, FakeLLM("b") as b:
        yield a, b


@pytest.fixture
async def served(serve_file: ServeFactory, llms: tuple[FakeLLM, FakeLLM]) -> Served:
    auth = {"header": {"Authorization": UPSTREAM_SECRET}}
    return await serve_file(with_admin(route_config([instance("a", llms[0].url, auth=auth)])))


async def call(http: aiohttp.ClientSession, method: str, url: str, body: Any = None,
               headers: dict[str, str] | None = None) -> tuple[int, Any]:
    async with http.request(method, url, json=body, headers=KEY if headers is None else headers
                            ) as resp:
        return resp.status, await resp.json()


async def test_every_call_needs_the_key(served: Served, http: aiohttp.ClientSession) -> None:
    for headers in ({}, {"X-API-KEY": "wrong"}, {"X-API-KEY": ADMIN_KEY + "x"}):
        for method, path in (("GET", "/admin/config"), ("GET", "/admin/routes"),
                             ("PUT", "/admin/routes/x"), ("DELETE", "/admin/routes/r1"),
                             ("POST", "/admin/reload"), ("GET", "/metrics")):
            status, body = await call(http, method, served.admin + path, {}, headers)
            assert status == 401, (method, path, headers)
            assert body["error"]["code"] == "invalid_api_key"
    assert len(served.running.gateway.table.routes) == 1


async def test_config_is_shown_with_secrets_masked(
    served: Served, http: aiohttp.ClientSession,
) -> None:
    status, body = await call(http, "GET", served.admin + "/admin/config")
    assert status == 200 and body["version"] == served.running.gateway.table.version
    config = body["config"]
    inst = config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]
    assert inst["auth"]["header"] == {"Authorization": "******"}
    assert config["admin"]["key"] == "******"
    assert inst["override"]["endpoint"].startswith("http://127.0.0.1:")  # not a secret
    status, body = await call(http, "GET", served.admin + "/admin/routes")
    assert body["routes"] == [{"id": "r1", "uri": "/v1/chat/completions",
                               "algorithm": "roundrobin", "instances": ["a"],
                               "health": {"a": "healthy"}}]


async def test_put_route_is_applied_and_written_to_the_file(
    served: Served, http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
) -> None:
    route = {"uri": "/v1/b", "plugins": {"ai-proxy-multi": {
        "instances": [instance("b", llms[1].url)]}}}
    status, body = await call(http, "PUT", served.admin + "/admin/routes/rb", route)
    assert status == 200 and body["applied"] is True
    async with http.post(served.url + "/v1/b", json=chat("hi")) as resp:
        assert (await resp.json())["choices"][0]["message"]["content"].startswith("[b]")
    on_disk = yaml.safe_load(served.path.read_text())
    assert [r["id"] for r in on_disk["routes"]] == ["r1", "rb"]
    # The file keeps the secret as written, not masked.
    auth = on_disk["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]["auth"]
    assert auth["header"]["Authorization"] == UPSTREAM_SECRET
    load_data(on_disk)  # and it is a valid config


async def test_put_invalid_route_is_400_with_field_paths_and_changes_nothing(
    served: Served, http: aiohttp.ClientSession,
) -> None:
    before = served.path.read_text()
    route = {"uri": "/v1/b", "plugins": {"ai-proxy-multi": {
        "instances": [{"name": "b", "provider": "no-such", "weight": -1}]}}}
    status, body = await call(http, "PUT", served.admin + "/admin/routes/rb", route)
    assert status == 400
    assert body["error"]["code"] == "invalid_config"
    assert "routes[1].plugins.ai-proxy-multi.instances[0].weight: Input should be greater " \
           "than or equal to 0" in body["error"]["errors"]
    status, body = await call(http, "PUT", served.admin + "/admin/routes/rb", [1])
    assert status == 400 and "JSON object" in body["error"]["message"]
    assert served.path.read_text() == before
    assert [r.spec.id for r in served.running.gateway.table.routes] == ["r1"]


async def test_delete_route_and_reload(served: Served, http: aiohttp.ClientSession,
                                       llms: tuple[FakeLLM, FakeLLM]) -> None:
    status, _ = await call(http, "DELETE", served.admin + "/admin/routes/nope")
    assert status == 404
    status, body = await call(http, "DELETE", served.admin + "/admin/routes/r1")
    assert status == 200 and body["applied"] is True
    async with http.post(served.url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 404
    assert yaml.safe_load(served.path.read_text())["routes"] == []

    served.rewrite(with_admin(route_config([instance("b", llms[1].url)])))
    status, body = await call(http, "POST", served.admin + "/admin/reload")
    assert status == 200 and body["errors"] == []
    assert [r.spec.id for r in served.running.gateway.table.routes] == ["r1"]
    served.rewrite(with_admin(route_config([instance("b", llms[1].url, weight=-1)])))
    status, body = await call(http, "POST", served.admin + "/admin/reload")
    assert status == 400
    assert body["errors"][0].startswith("routes[0].plugins.ai-proxy-multi.instances[0].weight")


async def test_explain_scores_a_prompt_on_a_semantic_route(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
) -> None:
    async with FakeEmbeddings() as embed:
        served = await serve_file(with_admin(route_config(
            [instance("default"), instance("code", examples=["write a python function"])],
            balancer={"algorithm": "semantic", "threshold": 0.5},
            embeddings={"provider": "openai-compatible",
                        "override": {"endpoint": embed.url}})))
        status, body = await call(http, "POST", served.admin + "/admin/routes/r1/explain",
                                  {"prompt": "python code please"})
        assert status == 200
        assert body["pick"] == "code" and body["reason"] == "matched"
        status, _ = await call(http, "POST", served.admin + "/admin/routes/r1/explain",
                               {"messages": [{"role": "user", "content": "python"}]})
        assert status == 200
        status, _ = await call(http, "POST", served.admin + "/admin/routes/r1/explain", {})
        assert status == 400
        status, _ = await call(http, "POST", served.admin + "/admin/routes/zz/explain",
                               {"prompt": "x"})
        assert status == 404


def test_admin_without_key_is_refused_off_loopback(tmp_path: Any) -> None:
    config = route_config([instance("a")])
    for listen in ("0.0.0.0:9180", "10.1.2.3:9180"):
        for extra in ({}, {"allow_no_key_on_loopback": True}):
            with pytest.raises(ConfigError) as err:
                load_data({**config, "admin": {"listen": listen, **extra}})
            assert err.value.errors[0].startswith("admin.key: required")
    with pytest.raises(ConfigError):  # loopback, but keyless was not asked for
        load_data({**config, "admin": {"listen": "127.0.0.1:9180"}})
    load_data({**config, "admin": {"listen": "127.0.0.1:9180", "allow_no_key_on_loopback": True}})
    path = tmp_path / "open.yaml"
    path.write_text(yaml.safe_dump({**config, "admin": {"listen": "0.0.0.0:0"}}))
    done = run_cli("serve", "--config", str(path))
    assert done.returncode == 1
    assert "admin.key: required" in done.stderr


async def test_keyless_admin_on_loopback_when_allowed(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
) -> None:
    served = await serve_file({**route_config([instance("a")]), "admin": {
        "listen": "127.0.0.1:0", "allow_no_key_on_loopback": True}})
    status, _ = await call(http, "GET", served.admin + "/admin/routes", headers={})
    assert status == 200


async def test_an_unknown_admin_path_is_a_typed_404_and_a_wrong_method_a_405(
    served: Served, http: aiohttp.ClientSession,
) -> None:
    status, body = await call(http, "GET", served.admin + "/admin/nope")
    assert status == 404 and body["error"]["code"] == "not_found", body
    assert body["error"]["type"] == "invalid_request_error"
    async with http.patch(served.admin + "/admin/routes/r1", headers=KEY) as resp:
        assert resp.status == 405 and "PUT" in resp.headers["Allow"]
        assert (await resp.json())["error"]["code"] == "method_not_allowed"


async def test_one_route_can_be_read(served: Served, http: aiohttp.ClientSession) -> None:
    status, body = await call(http, "GET", served.admin + "/admin/routes/r1")
    assert status == 200, body
    assert body["version"] == served.running.gateway.table.version
    assert body["route"] == {"id": "r1", "uri": "/v1/chat/completions",
                             "algorithm": "roundrobin", "instances": ["a"],
                             "health": {"a": "healthy"}}
    inst = body["config"]["plugins"]["ai-proxy-multi"]["instances"][0]
    assert inst["auth"]["header"] == {"Authorization": "******"}
    status, body = await call(http, "GET", served.admin + "/admin/routes/nope")
    assert status == 404 and body["error"]["code"] == "not_found"


async def test_reload_reports_what_this_reload_did(
    served: Served, http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
) -> None:
    good = with_admin(route_config([instance("b", llms[1].url)]))
    served.rewrite(with_admin(route_config([instance("b", llms[1].url, weight=-1)])))
    for _ in range(2):  # rejected twice: once per reload, not a growing total
        status, body = await call(http, "POST", served.admin + "/admin/reload")
        assert status == 400 and (body["applied"], body["failed"]) == (0, 1)
    served.rewrite(good)
    status, body = await call(http, "POST", served.admin + "/admin/reload")
    assert status == 200 and (body["applied"], body["failed"], body["errors"]) == (1, 0, [])
    status, body = await call(http, "POST", served.admin + "/admin/reload")  # unchanged
    assert status == 200 and (body["applied"], body["failed"], body["errors"]) == (0, 0, [])


async def test_a_route_that_takes_paths_from_another_is_warned_about(
    serve_file: ServeFactory, http: aiohttp.ClientSession, llms: tuple[FakeLLM, FakeLLM],
    caplog: pytest.LogCaptureFixture,
) -> None:
    served = await serve_file(with_admin(route_config([instance("a", llms[0].url)],
                                                      uri="/v1/*", route_id="auto")))
    route = {"uri": "/v1/chat/*", "plugins": {"ai-proxy-multi": {
        "instances": [instance("b", llms[1].url)]}}}
    status, body = await call(http, "PUT", served.admin + "/admin/routes/chat", route)
    assert status == 200 and body["applied"] is True
    warning = ("routes[1].uri: takes every path under /v1/chat/ from routes[0] (id auto, uri "
               "/v1/*), which no longer sees those requests")
    assert any(w.startswith(warning) for w in body["warnings"]), body["warnings"]
    assert any(warning in r.getMessage() for r in caplog.records
               if r.name == "semproxy.config")
