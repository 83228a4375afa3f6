"""What operators and clients see: no value from the environment in access-log lines, and
no deployment detail in a 502 body unless the route's debug switch is on."""

from __future__ import annotations

import json
import logging

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.observability.logging import JsonFormatter, redact

REFUSED = "http://127.0.0.1:9"  # discard port: nothing listens


async def test_a_model_from_the_environment_never_reaches_the_access_log(
    gateway: GatewayFactory, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with FakeLLM("a") as llm:
        config = route_config([instance("a", llm.url, options={"model": "${MODEL_SECRET}"})])
        gw = await gateway(config, {"MODEL_SECRET": "tenant-7-s3cret-deployment"})
        async with http.post(gw.url + "/v1/chat/completions", json=chat("hi", model="mine")
                             ) as resp:
            assert resp.status == 200
        assert llm.last_request.json["model"] == "tenant-7-s3cret-deployment"
    fmt = JsonFormatter()
    lines = [json.loads(fmt.format(r)) for r in caplog.records if r.name == "semproxy.access"]
    assert [line["model"] for line in lines] == ["mine"]
    assert "s3cret" not in "\n".join(fmt.format(r) for r in caplog.records)


@pytest.mark.parametrize("debug", [False, True])
async def test_a_502_names_the_instances_tried_only_with_debug_on(
    gateway: GatewayFactory, http: aiohttp.ClientSession, debug: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = route_config([instance("reasoning", REFUSED), instance("cheap", REFUSED)],
                          fallback_strategy="http_5xx", debug_headers=debug)
    gw = await gateway(config)
    async with http.post(gw.url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 502
        message = (await resp.json())["error"]["message"]
    if debug:
        assert message.startswith("no instance could serve the request; tried: ")
        assert "reasoning failed (connect)" in message
    else:
        assert message == ("no instance could serve the request; "
                           "attempts: failed (connect), failed (connect)")
        assert "reasoning" not in message and "cheap" not in message
    # The operator always has the detail in the log.
    assert any("reasoning (connect)" in r.getMessage() for r in caplog.records)


def test_a_logged_authorization_line_masks_the_credential_after_its_scheme() -> None:
    for line in ("Authorization: Token s3cr3t-token-value", "authorization=Basic dXNlcjpzM2Ny"):
        shown = redact(f"bad header {line} in request")
        assert "s3cr3t" not in shown and "dXNlcjpzM2Ny" not in shown
        assert shown.endswith("*** in request")
