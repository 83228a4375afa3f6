"""Values that used to validate and then fail at run time: listen addresses and header
values with line breaks; and APISIX route metadata, which used to be refused."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError

INST = "routes[0].plugins.ai-proxy-multi.instances[0]"


def errors_of(config: dict[str, Any], env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_data(config, env or {})
    return info.value.errors


@pytest.mark.parametrize(("where", "value", "expected"), [
    ("listen", "localhost:99999", "listen: Value error, port must be a number in 1-65535"),
    ("listen", "127.0.0.1:-1", "listen: Value error, port must be a number in 1-65535"),
    ("listen", 9080, "listen: Value error, must be HOST:PORT, e.g. 127.0.0.1:9080 (a bare "
                     "number gives no host: 127.0.0.1:9080?)"),
    ("listen", "9080", "listen: Value error, must be HOST:PORT, e.g. 127.0.0.1:9080 (for all "
                       "interfaces: 0.0.0.0:9080)"),
    ("admin", {"listen": "127.0.0.1:70000", "key": "k" * 16},
     "admin.listen: Value error, port must be a number in 1-65535"),
])
def test_a_listen_address_out_of_range_or_without_host_is_refused(
    where: str, value: Any, expected: str,
) -> None:
    config = {**route_config([instance("a")]), where: value}
    errors = errors_of(config)
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_good_listen_addresses_pass() -> None:
    for listen in ("127.0.0.1:9080", "0.0.0.0:1", "[::1]:65535", "localhost:0"):
        assert load_data({**route_config([instance("a")]), "listen": listen}, {}).listen == listen


@pytest.mark.parametrize("value", ["x\r\nInjected: yes", "tail\n", "nul\0"])
def test_a_header_value_with_cr_lf_or_nul_from_a_variable_is_refused(value: str) -> None:
    config = route_config([instance("a", "http://127.0.0.1:9", auth={
        "header": {"Authorization": "Bearer ${KEY}"}})])
    errors = errors_of(config, {"KEY": value})
    assert errors == [f"{INST}.auth.header.Authorization: Value error, must not contain CR, "
                      "LF or NUL (check the variable it comes from)"]
    assert all(value.strip() not in e for e in errors)


def test_a_health_check_header_with_a_line_break_is_refused() -> None:
    config = route_config([instance("a", "http://127.0.0.1:9", checks={
        "active": {"req_headers": ["X-Probe: ${P}"]}})])
    (error,) = errors_of(config, {"P": "a\nb"})
    assert error.startswith(f"{INST}.checks.active.req_headers[0]: Value error, must not")


APISIX_ROUTE = {
    "id": "r1", "uri": "/v1/chat/completions", "methods": ["POST"],
    "name": "chat", "desc": "pasted from the APISIX Admin API", "labels": {"team": "ml"},
    "status": 1, "create_time": 1733100000, "update_time": 1733100100,
}


def apisix_config(status: int) -> dict[str, Any]:
    config = route_config([instance("a")])
    config["routes"][0] = {**APISIX_ROUTE, "status": status,
                           "plugins": config["routes"][0]["plugins"]}
    return config


def test_apisix_route_metadata_is_accepted() -> None:
    loaded = load_data(apisix_config(1), {})
    assert [r.id for r in loaded.routes] == ["r1"]
    assert loaded.raw.routes[0].labels == {"team": "ml"}


async def test_a_route_with_status_0_is_disabled_and_answers_404(
    gateway: GatewayFactory, http: aiohttp.ClientSession,
) -> None:
    for status, expected in ((0, 404), (1, 200)):
        gw = await gateway(apisix_config(status))
        async with http.post(gw.url + "/v1/chat/completions", json=chat("hi")) as resp:
            assert resp.status == expected
            assert "error" in (await resp.json()) if expected == 404 else True


def test_a_disabled_route_is_still_validated() -> None:
    config = apisix_config(0)
    config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]["weight"] = -1
    assert errors_of(config)[0].startswith(f"{INST}.weight")
    config = apisix_config(2)
    assert errors_of(config)[0].startswith("routes[0].status")


def test_a_header_line_pasted_as_a_header_name_is_not_quoted_in_the_error() -> None:
    config = route_config([instance("a", "http://127.0.0.1:9", auth={
        "header": {"Authorization: Token s3cr3t-value": ""}})])
    (error,) = errors_of(config)
    assert "s3cr3t" not in error and "Token" not in error
    assert error.startswith(f"{INST}.auth.header.<a key that is not a plain name>: String "
                            "should match pattern")
