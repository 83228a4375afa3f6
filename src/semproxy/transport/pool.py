"""aiohttp's connection pool with two additions: an idle connection that speaks is dropped,
and at most `keepalive_pool` idle connections are kept per origin.

HTTP/1.1 has no request ids: an answer belongs to whichever request is
outstanding on its connection. If an upstream sends bytes while its
connection sits idle in the pool (the tail of a broken answer, a second
answer nobody asked for), aiohttp would parse them and hand them to the next
request that borrows the connection, from an unrelated client. The guard
closes such a connection the moment the bytes arrive, so it is never reused.

Doing that needs two aiohttp internals: the connector's `_release` (where a
connection goes back to the pool) and its `_factory` (which builds the
protocol object of each connection). aiohttp is capped below its next minor
release (pyproject.toml), and `check_pool_guard` proves at start, on a real
loopback connection, that the guard still works with the aiohttp installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import Any

import aiohttp
from aiohttp import TCPConnector
from aiohttp.client_proto import ResponseHandler

STRAY = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"


class GuardedHandler(ResponseHandler):
    """The protocol of one upstream connection, closed on bytes received while idle."""

    is_idle = False
    # The idle set of its origin while it is in it; only a connector with an idle cap
    # keeps one (counting costs a little on every request).
    _idle: set[GuardedHandler] | None = None

    def leave_pool(self) -> None:
        self.is_idle = False
        if self._idle is not None:
            self._idle.discard(self)
            self._idle = None

    def set_response_params(self, **params: Any) -> None:
        self.is_idle = False  # a request is going out on this connection
        if self._idle is not None:
            self._idle.discard(self)
            self._idle = None
        super().set_response_params(**params)

    def data_received(self, data: bytes) -> None:
        if self.is_idle and data:
            self.drop()
            return
        super().data_received(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.leave_pool()
        super().connection_lost(exc)

    def drop(self) -> None:
        """Close for good: the pool sees a closed connection and never hands it out."""
        self.leave_pool()
        self.force_close()
        if self.transport is not None:
            self.transport.close()


class GuardedConnector(TCPConnector):
    """A TCPConnector whose pooled connections are `GuardedHandler`s marked idle, at most
    `idle_cap` of them per origin when one is set (APISIX `keepalive_pool`: the rest are
    closed as they come back)."""

    def __init__(self, *, idle_cap: int | None, **options: Any) -> None:
        super().__init__(**options)
        self._factory = functools.partial(GuardedHandler, loop=self._loop)  # type: ignore[assignment]
        self.idle_cap = idle_cap
        self.idle: dict[Any, set[GuardedHandler]] = {}

    def _release(self, key: Any, protocol: ResponseHandler, *, should_close: bool = False
                 ) -> None:
        idle = None
        if self.idle_cap is not None:
            idle = self.idle.get(key)
            if idle is None:
                idle = self.idle[key] = set()
            if len(idle) >= self.idle_cap:
                should_close = True
        super()._release(key, protocol, should_close=should_close)
        if isinstance(protocol, GuardedHandler) and protocol.transport is not None:
            protocol.is_idle = True  # it went back to the pool (a closed one has no transport)
            if idle is not None:
                protocol._idle = idle
                idle.add(protocol)


def within(protocol: ResponseHandler | None, seconds: float) -> None:
    """Bound each read of the answer now being received on `protocol` to `seconds` of
    silence (a stream's reads; a whole answer has its attempt deadline instead).

    aiohttp's own per-read timer (`sock_read`), switched on after the headers: the
    same property and start its websocket client uses when it changes the bound of
    a connection mid-answer. The pool gives every request its own bound back.
    """
    if protocol is not None:
        protocol.read_timeout = seconds
        protocol.start_timeout()


async def check_pool_guard(connector: type[TCPConnector] = GuardedConnector,
                           timeout_s: float = 2.0) -> None:
    """Raise RuntimeError unless, with the aiohttp installed, a pooled connection that
    receives bytes while idle is closed (and so never lent to another request).

    A loopback server answers one request, then (once the client has released the
    connection to the pool) sends a stray answer on it; the guard must close the
    connection from the client side within `timeout_s`.
    """
    released, closed = asyncio.Event(), asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await released.wait()
            writer.write(STRAY)
            await writer.drain()
            if not await reader.read(1):  # EOF: the client closed the connection
                closed.set()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    options: dict[str, Any] = {"idle_cap": 8} if issubclass(connector, GuardedConnector) else {}
    try:
        async with aiohttp.ClientSession(connector=connector(**options)) as session:
            async with session.get(f"http://127.0.0.1:{port}/") as resp:
                await resp.read()
            released.set()
            await asyncio.wait_for(closed.wait(), timeout_s)
    except (TimeoutError, aiohttp.ClientError, TypeError, AttributeError) as exc:
        raise RuntimeError(
            f"semproxy's upstream pool guard does not work with aiohttp "
            f"{aiohttp.__version__} (a pooled connection that received stray bytes was not "
            f"closed: {type(exc).__name__}). Install the aiohttp pinned in constraints.txt."
        ) from exc
    finally:
        released.set()  # let the server's side end whatever happened
        server.close()
        await server.wait_closed()
