"""The upstream client (aiohttp behind `AiohttpTransport`) against real sockets: reuse, framing,
encodings, failures."""

from __future__ import annotations

import asyncio
import gzip
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.fakes.raw import RawServer, answer

from semproxy.errors import UpstreamConnectError, UpstreamError, UpstreamTimeoutError
from semproxy.transport.http import AiohttpTransport
from semproxy.transport.target import NetPolicy, Target


def target(url: str, timeout_s: float = 5.0, verify: bool = True, **headers: str) -> Target:
    return Target(url, {"Content-Type": "application/json", **headers},
                  NetPolicy(timeout_s=timeout_s, ssl_verify=verify), label="test-upstream")


@pytest.fixture
async def clients() -> AsyncIterator[AiohttpTransport]:
    http = AiohttpTransport()
    yield http
    await http.aclose()


async def ok_json(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
    writer.write(answer(b'{"n": %d}' % n, "Content-Type: application/json; charset=utf-8"))


async def test_sequential_requests_share_one_connection_and_send_one_head(
    clients: AiohttpTransport
) -> None:
    async with RawServer(ok_json) as up:
        port = up.url.split(":")[2].split("/")[0]
        for i in range(1, 6):
            reply = await clients.post(target(up.url), b'{"i": %d}' % i, f"rid-{i}")
            assert (reply.status, reply.content_type) == (200, "application/json; charset=utf-8")
            assert await reply.read() == b'{"n": %d}' % i
    assert up.connections == 1
    head = up.heads[-1].decode()
    assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{port}\r\n" in head
    assert "X-Request-Id: rid-5\r\n" in head and "Content-Length: 8\r\n" in head
    assert up.bodies[-1] == b'{"i": 5}'


async def test_an_idle_connection_the_upstream_closed_is_replaced_without_an_error(
    clients: AiohttpTransport
) -> None:
    async def answer_then_hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                                  n: int) -> None:
        writer.write(answer(b"{}"))  # keep-alive promised, then the server drops the socket
        await writer.drain()
        writer.close()

    async with RawServer(answer_then_hang_up) as up:
        for _ in range(3):
            reply = await clients.post(target(up.url), b"{}")
            assert await reply.read() == b"{}"
            await asyncio.sleep(0.05)  # let the close arrive while the connection is idle
    assert up.connections == 3


async def test_connection_close_answers_are_not_reused(clients: AiohttpTransport) -> None:
    async def close_each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         n: int) -> None:
        writer.write(answer(b"{}", "Connection: close"))

    async with RawServer(close_each) as up:
        for _ in range(2):
            assert await (await clients.post(target(up.url), b"{}")).read() == b"{}"
    assert up.connections == 2


async def test_chunked_bodies_are_read_whole_and_streamed_as_they_arrive(
    clients: AiohttpTransport
) -> None:
    async def sse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        for i in range(3):
            event = b"data: %d\n\n" % i
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")

    async with RawServer(sse) as up:
        reply = await clients.post(target(up.url), b"{}")
        assert reply.content_type == "text/event-stream"
        seen = []
        async for chunk in reply.iter_chunks():
            seen.append(chunk)
        reply.release()
        assert seen == [b"data: 0\n\n", b"data: 1\n\n", b"data: 2\n\n"]  # one event per read
        assert await (await clients.post(target(up.url), b"{}")).read() == \
            b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
    assert up.connections == 1


async def test_a_body_ended_by_closing_the_connection(clients: AiohttpTransport) -> None:
    async def http10(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"old\": true}")
        await writer.drain()
        writer.close()

    async with RawServer(http10) as up:
        assert await (await clients.post(target(up.url), b"{}")).read() == b'{"old": true}'


async def test_gzip_is_decoded_and_unknown_encodings_are_refused(clients: AiohttpTransport) -> None:
    async def encoded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      n: int) -> None:
        if n == 1:
            writer.write(answer(gzip.compress(b'{"zipped": 1}'), "Content-Encoding: gzip"))
        else:
            writer.write(answer(b"\x00\x01", "Content-Encoding: br"))

    async with RawServer(encoded) as up:
        assert await (await clients.post(target(up.url), b"{}")).read() == b'{"zipped": 1}'
        assert "Accept-Encoding: identity" in up.heads[0].decode()
        with pytest.raises(UpstreamError, match="unsupported content encoding"):
            await clients.post(target(up.url), b"{}")


async def test_garbage_instead_of_http_is_an_upstream_error(clients: AiohttpTransport) -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      n: int) -> None:
        writer.write(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")

    async with RawServer(garbage) as up:
        with pytest.raises(UpstreamError, match="invalid answer") as caught:
            await clients.post(target(up.url), b"{}")
    assert caught.value.status == 502


async def test_refused_connection_is_a_connect_error(clients: AiohttpTransport) -> None:
    async with RawServer(ok_json) as up:
        url = up.url
    with pytest.raises(UpstreamConnectError, match="unreachable"):
        await clients.post(target(url), b"{}")


async def test_silence_before_headers_and_mid_body_are_timeouts(clients: AiohttpTransport) -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        if n == 2:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345")
        await asyncio.sleep(5)

    async with RawServer(stall) as up:
        with pytest.raises(UpstreamTimeoutError) as caught:
            await clients.post(target(up.url, timeout_s=0.2), b"{}")
        assert caught.value.status == 504
        reply = await clients.post(target(up.url, timeout_s=0.2), b"{}")
        with pytest.raises(UpstreamTimeoutError):
            await reply.read()


async def test_a_header_value_with_a_line_break_is_never_sent(clients: AiohttpTransport) -> None:
    async with RawServer(ok_json) as up:
        for headers in ({"X-Key": "a\r\nX-Injected: 1"}, {"X Key": "a"}, {"X-Key:": "a"}):
            with pytest.raises(UpstreamError, match="not valid HTTP"):
                await clients.post(target(up.url, **headers), b"{}")
    assert up.connections == 0


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make a test certificate")
    tmp = tmp_path_factory.mktemp("tls")
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


async def test_https_checks_the_certificate_unless_told_not_to(
    clients: AiohttpTransport, tls_files: tuple[Path, Path]
) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*tls_files)
    async with RawServer(ok_json, tls=context) as up:
        with pytest.raises(UpstreamConnectError):
            await clients.post(target(up.url), b"{}")  # self-signed: verification fails
        reply = await clients.post(target(up.url, verify=False), b"{}")
        assert await reply.read() == b'{"n": 1}'
