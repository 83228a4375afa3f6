"""A forward proxy on loopback: CONNECT tunnels for https, absolute-form requests for http.

It records the first line and the Proxy-Authorization of each request it takes,
so a test can tell which upstream calls went through it.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit


class LoopbackProxy:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.auth: list[str | None] = []
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> LoopbackProxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        first, *lines = head.decode("latin-1").split("\r\n")
        method, target, version = first.split(" ")
        self.seen.append(f"{method} {target}")
        self.auth.append(next((line.split(":", 1)[1].strip() for line in lines
                               if line.lower().startswith("proxy-authorization:")), None))
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            parts = urlsplit(target)
            up_reader, up_writer = await asyncio.open_connection(parts.hostname, parts.port)
            kept = [line for line in lines if not line.lower().startswith("proxy-")]
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            up_writer.write(f"{method} {path} {version}\r\n".encode())
            up_writer.write("\r\n".join(kept).encode("latin-1"))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, asyncio.CancelledError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(Exception):
        writer.close()
