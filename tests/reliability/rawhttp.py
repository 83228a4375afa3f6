"""Raw HTTP/1.1 over a socket: for requests no well-behaved client library will send."""

from __future__ import annotations

import asyncio


async def exchange(url: str, head: bytes, body: bytes = b"", timeout: float = 5.0
                   ) -> tuple[int, dict[str, str], bytes]:
    """Send `head` (request line + headers, without the blank line) and `body`;
    return status, headers (lower-cased names) and whatever body arrived."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(head + b"\r\n\r\n" + body)
        await writer.drain()
        async with asyncio.timeout(timeout):
            status_line = await reader.readline()
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            data = await reader.readexactly(length) if length else b""
    finally:
        writer.close()
        await writer.wait_closed()
    return int(status_line.split()[1]), headers, data


def chat_head(path: str, body: bytes, *extra: bytes) -> bytes:
    lines = [b"POST " + path.encode() + b" HTTP/1.1", b"Host: 127.0.0.1",
             b"Content-Type: application/json", b"Content-Length: %d" % len(body), *extra]
    return b"\r\n".join(lines)
