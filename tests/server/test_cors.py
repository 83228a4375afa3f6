"""CORS in the APISIX `cors` plugin's form (issue 24): off by default; a route with it
answers preflights (before key-auth) and gives every answer the headers a browser needs,
only to the origins it allows."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError

KEY = "browser-key-123456"
URL = "/v1/chat/completions"
PREFLIGHT = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization,content-type"}


def config(cors: dict[str, Any] | None, key_auth: bool = False) -> dict[str, Any]:
    doc = route_config([instance("e")], uri="/v1/*")
    plugins = doc["routes"][0]["plugins"]
    if cors is not None:
        plugins["cors"] = cors
    if key_auth:
        plugins["key-auth"] = {}
        doc["consumers"] = [{"username": "web", "plugins": {"key-auth": {"key": KEY}}}]
    return doc


def cors_of(resp: aiohttp.ClientResponse) -> dict[str, str]:
    return {k: v for k, v in resp.headers.items()
            if k.lower().startswith("access-control-") or k.lower() == "vary"}


async def test_without_the_plugin_there_is_no_cors(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    gw = await gateway(config(None))
    async with http.options(f"{gw.url}{URL}", headers=PREFLIGHT) as resp:
        assert resp.status == 405 and cors_of(resp) == {}
    async with http.post(f"{gw.url}{URL}", json=chat("hi"), headers=PREFLIGHT) as resp:
        assert resp.status == 200 and cors_of(resp) == {}


async def test_the_defaults_allow_any_origin_and_a_preflight_needs_no_key(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    gw = await gateway(config({}, key_auth=True))
    async with http.options(f"{gw.url}{URL}", headers=PREFLIGHT) as resp:
        assert resp.status == 200
        assert cors_of(resp) == {
            "Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "*",
            "Access-Control-Allow-Headers": "*", "Access-Control-Expose-Headers": "*",
            "Access-Control-Max-Age": "5"}
    # The real request needs its key; refused or served, the browser may read the answer.
    async with http.post(f"{gw.url}{URL}", json=chat("hi"), headers=PREFLIGHT) as resp:
        assert resp.status == 401
        assert resp.headers["Access-Control-Allow-Origin"] == "*"
    headers = {**PREFLIGHT, "Authorization": f"Bearer {KEY}"}
    async with http.post(f"{gw.url}{URL}", json=chat("hi", stream=True),
                         headers=headers) as resp:
        assert resp.status == 200 and resp.headers["Access-Control-Allow-Origin"] == "*"
        assert b"[DONE]" in await resp.read()


async def test_listed_origins_only_and_credentials_when_asked(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    gw = await gateway(config({"allow_origins": "https://app.example,https://admin.example",
                               "allow_methods": "POST,GET", "allow_headers": "**",
                               "expose_headers": "X-Request-Id", "max_age": 600,
                               "allow_credential": True}))
    async with http.options(f"{gw.url}{URL}", headers=PREFLIGHT) as resp:
        assert resp.status == 200
        assert cors_of(resp) == {
            "Access-Control-Allow-Origin": "https://app.example", "Vary": "Origin",
            "Access-Control-Allow-Methods": "POST,GET",
            "Access-Control-Allow-Headers": "authorization,content-type",
            "Access-Control-Expose-Headers": "X-Request-Id",
            "Access-Control-Max-Age": "600", "Access-Control-Allow-Credentials": "true"}
    stranger = {**PREFLIGHT, "Origin": "https://evil.example"}
    async with http.options(f"{gw.url}{URL}", headers=stranger) as resp:
        assert resp.status == 200 and cors_of(resp) == {}  # the browser will refuse it
    async with http.post(f"{gw.url}{URL}", json=chat("hi"), headers=stranger) as resp:
        assert resp.status == 200 and cors_of(resp) == {}


async def test_origins_by_regex_decide_when_given(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    gw = await gateway(config({"allow_origins": "https://app.example",
                               "allow_origins_by_regex": [r"https://.*\.test\.example"]}))
    for origin, allowed in (("https://a.test.example", True), ("https://app.example", False)):
        async with http.post(f"{gw.url}{URL}", json=chat("hi"),
                             headers={"Origin": origin}) as resp:
            assert resp.headers.get("Access-Control-Allow-Origin") == (
                origin if allowed else None)


@pytest.mark.parametrize(("cors", "where", "said"), [
    ({"allow_credential": True}, "cors.allow_origins", "cannot be used with allow_credential"),
    ({"allow_credential": True, "allow_origins": "https://a"}, "cors.allow_methods",
     "cannot be used with allow_credential"),
    ({"allow_origins_by_regex": ["("]}, "cors.allow_origins_by_regex[0]",
     "not a regular expression"),
    ({"allow_headers": "a\r\nX-Injected: 1"}, "cors.allow_headers", "must not contain CR"),
    ({"max_age": -2}, "cors.max_age", "greater than or equal to -1"),
])
def test_a_cors_setting_that_cannot_work_fails_the_load_at_its_path(
        cors: dict[str, Any], where: str, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_data(config(cors), {})
    assert any(e.startswith(f"routes[0].plugins.{where}: ") and said in e
               for e in refused.value.errors), refused.value.errors
