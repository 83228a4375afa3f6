"""A raw-socket upstream: it answers each request with exactly the bytes its script writes.

For hostile-upstream tests, where the point is bytes no HTTP library would send
(stray answers, bad framing, invalid statuses). It records every connection and
request, so a test can tell whether a connection was reused and what was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class RawServer:
    def __init__(self, script: Script, tls: ssl.SSLContext | None = None) -> None:
        self.script = script
        self.tls = tls
        self.connections = 0
        self.open = 0
        self.peak_open = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.server: asyncio.Server | None = None
        self._tasks: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls,
                                                 backlog=1024)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self._tasks):
            writer.close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    @property
    def origin(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.origin}/v1/chat/completions"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        self.peak_open = max(self.peak_open, self.open)
        self._tasks.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                self.heads.append(head)
                self.bodies.append(await reader.readexactly(length))
                await self.script(reader, writer, len(self.heads))  # requests so far
                if writer.is_closing():
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError,
                asyncio.LimitOverrunError, ssl.SSLError):
            pass  # the client left, or the test is over
        finally:
            self.open -= 1
            self._tasks.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()


def answer(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    """One HTTP/1.1 answer; Content-Length added unless the headers frame the body."""
    lines = [f"HTTP/1.1 {status}", *headers]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
