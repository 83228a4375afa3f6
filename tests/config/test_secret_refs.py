"""APISIX secret references in credentials: `$env://` resolved, `$secret://` and shell
`$KEY` refused with the fix, and an APISIX route pasted in unchanged reaches the upstream
with the real key."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError

INST = "routes[0].plugins.ai-proxy-multi.instances[0]"


def with_auth(auth: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return route_config([instance("a", "http://127.0.0.1:9", auth=auth, **fields)])


def headers_of(config: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    return dict(load_data(config, env).routes[0].instances[0].target.headers)


def errors_of(config: dict[str, Any], env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_data(config, env or {})
    return info.value.errors


def test_env_reference_is_resolved_in_an_auth_header() -> None:
    config = with_auth({"header": {"Authorization": "Bearer $env://OPENAI_KEY"}})
    assert headers_of(config, {"OPENAI_KEY": "sk-1"})["Authorization"] == "Bearer sk-1"


def test_env_reference_with_a_key_reads_a_json_object() -> None:
    config = with_auth({"header": {"api-key": "$env://CREDS/azure"}})
    env = {"CREDS": '{"azure": "az-2", "other": "x"}'}
    assert headers_of(config, env)["api-key"] == "az-2"
    assert errors_of(config, {"CREDS": "not json"}) == [
        f"{INST}.auth.header.api-key: environment variable CREDS does not hold a JSON object "
        "with a string 'azure'"]


def test_env_reference_in_a_query_and_an_admin_key_is_resolved() -> None:
    config = with_auth({"query": {"key": "$env://GEMINI"}})
    config["admin"] = {"listen": "127.0.0.1:0", "key": "$env://ADMIN"}
    loaded = load_data(config, {"GEMINI": "g-3", "ADMIN": "admin-key-4"})
    assert loaded.routes[0].instances[0].target.url.endswith("?key=g-3")
    assert loaded.admin is not None and loaded.admin.key == "admin-key-4"


def test_a_missing_env_reference_names_the_variable_and_the_field() -> None:
    config = with_auth({"header": {"Authorization": "Bearer $env://NOPE"}})
    assert errors_of(config) == [
        f"{INST}.auth.header.Authorization: environment variable NOPE is not set"]


def test_a_secret_manager_reference_is_refused_naming_the_field_and_the_fix() -> None:
    config = with_auth({"header": {"Authorization": "Bearer $secret://vault/openai/key"}})
    (error,) = errors_of(config)
    assert error.startswith(f"{INST}.auth.header.Authorization: $secret:// needs a secret "
                            "manager")
    assert "$env://NAME" in error and "vault/openai" not in error


def test_a_shell_style_variable_is_refused_with_the_fix() -> None:
    config = with_auth({"header": {"Authorization": "Bearer $OPENAI_KEY"}})
    assert errors_of(config, {"OPENAI_KEY": "sk"}) == [
        f"{INST}.auth.header.Authorization: $OPENAI_KEY is not expanded; write ${{OPENAI_KEY}} "
        "(or $env://OPENAI_KEY)"]


def test_a_dollar_inside_a_substituted_value_is_not_read_again() -> None:
    config = with_auth({"header": {"Authorization": "Bearer ${KEY}"}})
    value = "p$SSWORD$env://X$secret://y"
    assert headers_of(config, {"KEY": value})["Authorization"] == "Bearer " + value


def test_an_env_reference_outside_credentials_is_refused() -> None:
    config = with_auth({}, options={"model": "$env://MODEL"})
    (error,) = errors_of(config, {"MODEL": "m"})
    assert error.startswith(f"{INST}.options.model: $env:// is resolved only in credentials")


async def test_an_apisix_route_pasted_unchanged_sends_the_real_key(
    gateway: GatewayFactory, http: aiohttp.ClientSession,
) -> None:
    async with FakeLLM("a") as llm:
        route = {
            "id": "1", "uri": "/v1/chat/completions", "name": "llm", "status": 1,
            "desc": "from APISIX", "labels": {"env": "prod"},
            "create_time": 1733100000, "update_time": 1733100000,
            "plugins": {"ai-proxy-multi": {"instances": [{
                "name": "a", "provider": "openai-compatible", "weight": 1,
                "auth": {"header": {"Authorization": "Bearer $env://LLM_KEY"}},
                "options": {"model": "m"}, "override": {"endpoint": llm.url}}]}},
        }
        gw = await gateway({"listen": "127.0.0.1:0", "routes": [route]}, {"LLM_KEY": "sk-real"})
        async with http.post(gw.url + "/v1/chat/completions", json=chat("hi")) as resp:
            assert resp.status == 200
        assert llm.last_request.headers["Authorization"] == "Bearer sk-real"


def test_a_variable_outside_credentials_is_still_filled_in_from_a_file() -> None:
    config = with_auth({}, options={"model": "${MODEL:-fallback}-${SIZE}"})
    loaded = load_data(config, {"SIZE": "large"})
    assert loaded.routes[0].instances[0].options["model"] == "fallback-large"
