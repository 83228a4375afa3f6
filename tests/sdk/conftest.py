"""The gateway on a real socket, one `/v1/*` route, for the official client SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway


@pytest.fixture
async def up() -> AsyncIterator[FakeLLM]:
    async with FakeLLM("up") as server:
        yield server


@pytest.fixture
async def gw(gateway: GatewayFactory, up: FakeLLM) -> RunningGateway:
    """Instance `a` is an OpenAI-style upstream, so every other protocol is translated."""
    return await gateway(route_config([instance("a", up.url)], uri="/v1/*",
                                      debug_headers=True))


@pytest.fixture
async def echo_gw(gateway: GatewayFactory) -> RunningGateway:
    return await gateway(route_config([instance("e")], uri="/v1/*"))
