"""The upstream leg of a request: HTTP/1.1 over pooled keep-alive connections.

Every request the gateway relays is one upstream POST, so the client's own
cost is paid per request. aiohttp's client prepares each request through a
general pipeline (cookies, proxies, auth, redirects, tracing, multipart) that
an LLM call never uses; here a target's request head is rendered once, a
request is that head plus two headers and the body in one write, and the
response is parsed by llhttp (the `httptools` binding) straight into a
`WireReply`. The profile of the gateway under load showed the aiohttp client
as its largest single cost; see bench/results.md for the effect.

Semantics kept from before: the route timeout bounds each wait (connect, then
every read), not the whole exchange, so a long stream whose chunks keep coming
is never cut off; transport failures become the gateway's error tree
(`UpstreamConnectError`, `UpstreamTimeoutError`, `UpstreamError`); a reply is
returned once the status line and headers arrived and `release` gives the
connection back (or closes it when the answer was not read to the end).
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

from semproxy.errors import UpstreamConnectError, UpstreamError, UpstreamTimeoutError

# Response bytes buffered while streaming before reading from the upstream
# pauses (a slow client must not make the gateway hold a whole stream).
HIGH_WATER = 256 * 1024
MAX_IDLE_PER_ORIGIN = 256
_BAD_HEADER_CHARS = ("\r", "\n", "\0")


@dataclass(frozen=True, slots=True)
class Origin:
    host: str
    port: int
    tls: bool
    verify: bool


@dataclass(frozen=True, slots=True)
class Prepared:
    """Everything about one target that does not change between requests."""

    origin: Origin
    head: bytes  # request line, Host and the target's headers, each ending in CRLF
    label: str
    timeout_s: float
    keepalive: bool
    keepalive_timeout_s: float


def prepare(url: str, headers: Mapping[str, str], label: str, timeout_s: float,
            verify: bool, keepalive: bool, keepalive_timeout_s: float) -> Prepared:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamError(f"upstream {label} has an unsupported URL")
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    host = parts.hostname
    authority = f"[{host}]" if ":" in host else host
    if port != (443 if tls else 80):
        authority += f":{port}"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    lines = [f"POST {path} HTTP/1.1", f"Host: {authority}", "Accept-Encoding: identity"]
    for name, value in headers.items():
        if (any(c in name or c in value for c in _BAD_HEADER_CHARS) or ":" in name
                or not name or any(c.isspace() for c in name)):
            raise UpstreamError(f"upstream {label}: a configured header is not valid HTTP")
        lines.append(f"{name}: {value}")
    if not keepalive:
        lines.append("Connection: close")
    try:
        head = ("\r\n".join(lines) + "\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise UpstreamError(f"upstream {label}: a configured header is not valid HTTP") from None
    return Prepared(Origin(host, port, tls, verify), head, label, timeout_s, keepalive,
                    keepalive_timeout_s)


class WireReply:
    """One upstream answer: status and content type at once, the body as it arrives."""

    __slots__ = ("_chunks", "_conn", "_decoder", "_done", "_error", "_framed", "_got_bytes",
                 "_label", "_paused", "_size", "_streaming", "_timeout", "_waiter",
                 "content_type", "encoding", "headers_done", "status")

    def __init__(self, conn: _Connection, label: str, timeout_s: float) -> None:
        self._conn: _Connection | None = conn
        self._label = label
        self._timeout = timeout_s
        self.status = 0
        self.content_type = "application/json"
        self.encoding = b""
        self.headers_done = False
        self._framed = False  # Content-Length or Transfer-Encoding seen
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._decoder: Any = None
        self._done = False
        self._error: UpstreamError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._got_bytes = False
        self._streaming = False
        self._paused = False

    # -- fed by the connection -------------------------------------------
    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _headers(self, status: int) -> None:
        self.status = status
        self.headers_done = True
        enc = self.encoding.strip().lower()
        if enc in (b"gzip", b"x-gzip"):
            self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == b"deflate":
            self._decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)
        elif enc not in (b"", b"identity"):
            self._fail(UpstreamError(f"upstream {self._label} answered in an unsupported "
                                     f"content encoding"))
            return
        self._wake()

    def _feed(self, data: bytes) -> None:
        if self._decoder is not None:
            try:
                data = self._decoder.decompress(data)
            except zlib.error:
                self._fail(UpstreamError(f"upstream {self._label} sent a corrupt body"))
                return
        if data:
            self._chunks.append(data)
            self._size += len(data)
            if self._streaming and self._size > HIGH_WATER and not self._paused:
                self._paused = self._pause(True)
            self._wake()

    def _complete(self) -> None:
        if self._decoder is not None:
            rest = self._decoder.flush()
            if rest:
                self._chunks.append(rest)
        self._done = True
        self._wake()

    def _fail(self, error: UpstreamError) -> None:
        if not self._done:
            self._error = error
            self._done = True
            if self._conn is not None:
                self._conn.close()
            self._wake()

    def _pause(self, pause: bool) -> bool:
        conn = self._conn
        if conn is not None and conn.transport is not None and not conn.closed:
            if pause:
                conn.transport.pause_reading()
            else:
                conn.transport.resume_reading()
        return pause

    # -- read by the handler ---------------------------------------------
    async def _wait(self) -> None:
        """Wait for the next event on this reply, at most one route timeout."""
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(self._timeout, _expire, waiter)
        try:
            await waiter
        except TimeoutError:
            raise UpstreamTimeoutError(f"upstream {self._label} timed out") from None
        finally:
            timer.cancel()
            self._waiter = None

    async def wait_headers(self) -> None:
        while not self.headers_done and self._error is None:
            await self._wait()
        if self._error is not None:
            raise self._error

    async def read(self) -> bytes:
        """The whole body; the connection is released whatever happens."""
        try:
            while not self._done:
                await self._wait()
            if self._error is not None:
                raise self._error
            return b"".join(self._chunks)
        finally:
            self.release()

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive (the caller releases the reply)."""
        self._streaming = True
        while True:
            if self._chunks:
                chunk = self._chunks.popleft()
                self._size -= len(chunk)
                if self._paused and self._size < HIGH_WATER // 2:
                    self._paused = self._pause(False)
                yield chunk
            elif self._error is not None:
                raise self._error
            elif self._done:
                return
            else:
                await self._wait()

    def release(self) -> None:
        """Give the connection back when the answer was read whole, else close it."""
        if self._paused:  # a pooled connection must be reading again
            self._paused = self._pause(False)
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.finish(reusable=self._done and self._error is None)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class _Connection(asyncio.Protocol):
    """One keep-alive connection to an origin; serves one reply at a time."""

    def __init__(self, pool: ConnectionPool, origin: Origin, prepared: Prepared) -> None:
        self.pool = pool
        self.origin = origin
        self.keepalive = prepared.keepalive
        self.keepalive_timeout_s = prepared.keepalive_timeout_s
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.reply: WireReply | None = None
        self.closed = False
        self.served = 0
        self.idle_since = 0.0
        self._informational = False
        self.reusable = False  # the last answer allows another request on this connection

    # -- asyncio.Protocol --------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not subclasses of asyncio.Transport, only alike.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        reply = self.reply
        if reply is None or reply._done:  # bytes nobody asked for: not reusable
            self.close()
            return
        reply._got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            reply._fail(UpstreamError(f"upstream {reply._label} sent an invalid HTTP response"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        reply = self.reply
        if reply is None or reply._done:
            return
        if reply.headers_done and not reply._framed and exc is None:
            reply._complete()  # a body delimited by the end of the connection
        else:
            reply._fail(_StaleConnection(f"upstream {reply._label} closed the connection")
                        if not reply._got_bytes and self.served > 1
                        else UpstreamError(f"upstream {reply._label} closed the connection"))

    # -- httptools callbacks -------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        reply = self.reply
        assert reply is not None
        lower = name.lower()
        if lower == b"content-type":
            reply.content_type = value.decode("latin-1")
        elif lower == b"content-encoding":
            reply.encoding = value
        elif lower in (b"content-length", b"transfer-encoding"):
            reply._framed = True

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim answer; the real one follows
            self._informational = True
            return
        assert self.reply is not None
        self.reply._headers(status)

    def on_body(self, body: bytes) -> None:
        assert self.reply is not None
        self.reply._feed(body)

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        assert self.reply is not None
        # Asked now: once the message is over the parser resets and says False.
        self.reusable = self.parser.should_keep_alive()
        self.reply._complete()

    # -- use -------------------------------------------------------------
    def start(self, reply: WireReply, request: bytes) -> None:
        assert self.transport is not None
        self.reply = reply
        self.served += 1
        self.transport.write(request)

    def finish(self, reusable: bool) -> None:
        keep = reusable and self.keepalive and self.reusable and not self.closed
        self.reusable = False
        self.reply = None
        if keep:
            self.idle_since = time.monotonic()
            self.pool.put(self)
        else:
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.close()
            self.pool.forget(self)


class _StaleConnection(UpstreamError):
    """A reused connection closed before any answer: the request may be sent again."""


class ConnectionPool:
    """Idle keep-alive connections per origin, most recently used first."""

    def __init__(self) -> None:
        self._idle: dict[Origin, list[_Connection]] = {}
        self._live: set[_Connection] = set()
        self._ssl: dict[bool, ssl.SSLContext] = {}

    def put(self, conn: _Connection) -> None:
        idle = self._idle.setdefault(conn.origin, [])
        if len(idle) >= MAX_IDLE_PER_ORIGIN:
            conn.close()
            return
        idle.append(conn)

    def forget(self, conn: _Connection) -> None:
        """A closed connection leaves the pool at once (not only when next popped)."""
        self._live.discard(conn)
        idle = self._idle.get(conn.origin)
        if idle and conn in idle:
            idle.remove(conn)

    def _take_idle(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            assert conn.transport is not None
            if conn.closed or conn.transport.is_closing() \
                    or now - conn.idle_since > conn.keepalive_timeout_s:
                conn.close()
                continue
            return conn
        return None

    async def _connect(self, prepared: Prepared) -> _Connection:
        origin = prepared.origin
        loop = asyncio.get_running_loop()
        context = self._context(origin.verify) if origin.tls else None
        try:
            async with asyncio.timeout(prepared.timeout_s):
                _, conn = await loop.create_connection(
                    lambda: _Connection(self, origin, prepared), origin.host, origin.port,
                    ssl=context, server_hostname=origin.host if context else None)
        except TimeoutError as exc:
            raise UpstreamTimeoutError(f"upstream {prepared.label} timed out") from exc
        except OSError as exc:  # refused, unresolvable, TLS failures (SSLError is an OSError)
            raise UpstreamConnectError(
                f"upstream {prepared.label} unreachable: {type(exc).__name__}") from exc
        self._live.add(conn)
        return conn

    def _context(self, verify: bool) -> ssl.SSLContext:
        context = self._ssl.get(verify)
        if context is None:
            context = ssl.create_default_context()
            if not verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            self._ssl[verify] = context
        return context

    async def request(self, prepared: Prepared, request: bytes) -> WireReply:
        """Send `request` and return the reply once its headers arrived.

        A pooled connection the upstream closed while it sat idle fails before any
        answer; the request then goes once more on a fresh connection.
        """
        conn = self._take_idle(prepared.origin)
        for fresh in (conn is None, True):
            if fresh:
                conn = await self._connect(prepared)
            assert conn is not None
            reply = WireReply(conn, prepared.label, prepared.timeout_s)
            try:
                conn.start(reply, request)
                await reply.wait_headers()
                return reply
            except _StaleConnection:
                conn.close()
                if fresh:
                    raise UpstreamError(f"upstream {prepared.label} closed the connection"
                                        ) from None
            except BaseException:
                conn.close()  # cancelled or failed mid-exchange: the connection is unusable
                raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        for idle in list(self._idle.values()):
            for conn in list(idle):  # closing removes it from the list
                conn.close()
        self._idle.clear()
        for conn in list(self._live):
            conn.close()
