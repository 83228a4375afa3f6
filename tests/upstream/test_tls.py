"""TLS per instance: a CA bundle to trust and a client certificate for an mTLS upstream.

The upstream on 127.0.0.1 requires a client certificate signed by a CA the
test makes with the openssl CLI; verification stays on by default.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from tests.conftest import GatewayFactory, instance, route_config

from semproxy.admin.run import start
from semproxy.config.loader import load_data
from semproxy.config.source import FileSource
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


class Fifo:
    """A FIFO, and a watcher that notices (and releases) anyone who opens it to read.

    Opening a FIFO for reading blocks until a writer comes; the watcher comes as the
    writer, so a gateway that wrongly opens it fails this test instead of hanging it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.was_opened = False
        self._stop = threading.Event()
        os.mkfifo(path)
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: nobody has it open for reading
                continue
            self.was_opened = True
            os.close(fd)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Fifo]:
    made = Fifo(tmp_path / "fifo.pem")
    yield made
    made.close()


@pytest.mark.parametrize(("kind", "said"), [
    ("missing", "does not exist"), ("directory", "is a directory"),
    ("fifo", "is not a regular file"),
])
def test_tls_files_must_be_regular_files_and_the_error_says_what_each_is(
        tmp_path: Path, fifo: Fifo, kind: str, said: str) -> None:
    path = fifo.path if kind == "fifo" else tmp_path / "ca.pem"
    if kind == "directory":
        path.mkdir()
    config = route_config([instance("a", "https://127.0.0.1:1/v1", tls={"ca_file": str(path)})])
    with pytest.raises(ConfigError) as caught:
        load_data(config, {})
    assert any(f"tls.ca_file {path} {said}" in e for e in caught.value.errors), \
        caught.value.errors
    assert not fifo.was_opened


async def test_an_admin_write_naming_a_fifo_is_refused_and_the_gateway_keeps_answering(
        tmp_path: Path, http: aiohttp.ClientSession, fifo: Fifo) -> None:
    config = {"listen": "127.0.0.1:0", "admin": {"listen": "127.0.0.1:0", "key": "k" * 16},
              "routes": [{"id": "r", "uri": "/v1/*", "plugins": {"ai-proxy-multi": {
                  "instances": [instance("a")]}}}]}
    path = tmp_path / "c.yaml"
    path.write_text(orjson.dumps(config).decode())
    source = FileSource(path, interval_s=60)
    running = await start(await source.load(), "127.0.0.1:0", source=source)
    try:
        route = {"uri": "/v2/*", "plugins": {"ai-proxy-multi": {"instances": [
            instance("b", "https://127.0.0.1:1/v1", tls={"ca_file": str(fifo.path)})]}}}
        assert running.admin_url is not None
        put = http.put(f"{running.admin_url}/admin/routes/r2", json=route,
                       headers={"X-API-KEY": "k" * 16})
        async with asyncio.timeout(5):
            async with put as resp:
                assert resp.status == 400
                assert "is not a regular file" in (await resp.text())
            async with http.get(f"{running.url}/healthz") as health:
                assert health.status == 200
        assert not fifo.was_opened
    finally:
        await running.close()
