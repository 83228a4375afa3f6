"""TLS per instance: a CA bundle to trust and a client certificate for an mTLS upstream.

The upstream on 127.0.0.1 requires a client certificate signed by a CA the
test makes with the openssl CLI; verification stays on by default.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, instance, route_config

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError

from .conftest import Raw, ask, completion, ok
from .tls_files import Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pki]:
    yield make_pki(tmp_path_factory.mktemp("pki"))


def mtls_server_context(pki: Pki) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki.ca))
    context.load_cert_chain(pki.server_cert, pki.server_key)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


async def fine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    writer.write(ok("over mtls"))


def tls(pki: Pki, client: bool = True) -> dict[str, Any]:
    files: dict[str, Any] = {"ca_file": str(pki.ca)}
    if client:
        files |= {"cert_file": str(pki.client_cert), "key_file": str(pki.client_key)}
    return files


async def test_an_instance_with_its_ca_and_client_certificate_reaches_an_mtls_upstream(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, pki: Pki
) -> None:
    up = await raw(fine, tls=mtls_server_context(pki))
    gw = await gateway(route_config([instance("a", up.url, tls=tls(pki))]))
    assert await ask(http, gw) == (200, completion("over mtls"))
    assert await ask(http, gw) == (200, completion("over mtls"))
    assert up.connections == 1


@pytest.mark.parametrize("case", ["no client certificate", "no ca", "no verify"])
async def test_without_the_right_files_the_handshake_fails_as_a_502(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, pki: Pki, case: str
) -> None:
    up = await raw(fine, tls=mtls_server_context(pki))
    fields: dict[str, Any] = {
        "no client certificate": {"tls": tls(pki, client=False)},
        "no ca": {},  # the system store does not know the test CA
        "no verify": {},
    }[case]
    plugin = {"ssl_verify": False} if case == "no verify" else {}
    gw = await gateway(route_config([instance("a", up.url, **fields)], **plugin))
    status, body = await ask(http, gw)
    assert status == 502 and b"upstream_error" in body


def test_unreadable_tls_files_fail_the_config_load_at_their_path(tmp_path: Path) -> None:
    config = route_config([instance("a", "https://127.0.0.1:1/v1",
                                    tls={"ca_file": str(tmp_path / "missing.pem")})])
    with pytest.raises(ConfigError) as caught:
        load_data(config, {})
    assert any(e.startswith("routes[0].plugins.ai-proxy-multi.instances[0]:")
               and "TLS files" in e for e in caught.value.errors)
