"""Client sockets: the open-file limit, a cap on client connections, and the headers of
answers aiohttp writes itself.

Every client connection holds a file descriptor, and so does every upstream
connection, log file and the listener itself. When clients use up the
process's descriptors, `accept()` fails and nobody is answered, `/healthz`
included. So a worker raises its soft open-file limit to the hard limit at
start, and keeps client connections under a cap (`max_connections`, by
default what the limit leaves once each client may hold an upstream
connection too):

- at the cap, a new client is admitted and older connections are asked to
  leave: idle ones first (closed at once), oldest first, then, when too few
  are idle, the oldest busy ones after their current answer (as nginx reuses
  keep-alive connections when it runs out), so a new client, a health probe
  included, is served;
- busy connections that were asked to leave still hold their descriptors, so
  above the cap there is a little headroom (1/64 of it, at least 4) and no
  more: a client arriving beyond it is shed at once with a 503 and a log
  line, never left to a failed `accept()` or a silent reset.

Each step is logged, at most once per LOG_INTERVAL_S. The count is the
server's own table of live connections, read without copying it (a copy per
accept cost 606 us at 15,000 connections).

Answers aiohttp writes before any route runs (a malformed request line or
header: 400) skip `on_response_prepare`, so the connections of semproxy's own
listeners are `StampedRequestHandler`s, whose `handle_error` adds the same
headers as every other answer. Other aiohttp servers in the process (tests,
embedding applications) are left as they are.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Mapping
from typing import Any, cast

from aiohttp import web

log = logging.getLogger("semproxy.server")

# Every answer names the gateway without versions (aiohttp's default banner is
# `Python/3.11 aiohttp/3.x`: a free hint for anyone matching known flaws), and no
# browser may guess a JSON error or an event stream to be HTML.
ANSWER_HEADERS = {"Server": "semproxy", "X-Content-Type-Options": "nosniff"}

# Descriptors kept out of the client budget: listeners, logs, config, model files, and
# the headroom above the cap (a worker uses about 20 of its own).
RESERVED_FDS = 64
# Without an explicit setting, at most this many client connections per worker.
DEFAULT_MAX_CONNECTIONS = 4096
# At most one log line of each kind per this many seconds.
LOG_INTERVAL_S = 10.0
# What a client shed beyond the headroom reads (if it reads at all before the close).
_SHED_BODY = (b'{"error":{"message":"the gateway has too many open connections; retry",'
              b'"type":"server_error","param":null,"code":"service_unavailable"}}')
SHED_ANSWER = (b"HTTP/1.1 503 Service Unavailable\r\nServer: semproxy\r\n"
               b"Content-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(_SHED_BODY), _SHED_BODY))


SHED_LINGER_S = 1.0
MAX_LINGERING = 16  # shed sockets waiting for their client at once (out of RESERVED_FDS)


def raise_open_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit where allowed; the soft limit after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:  # macOS refuses an infinite soft limit
        hard = max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, hard, exc)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def headroom(limit: int) -> int:
    """Connections admitted above the cap while busy ones asked to leave finish (it comes
    out of RESERVED_FDS: a worker's own descriptors are far fewer than 64)."""
    return max(4, limit // 64)


def default_max_connections(open_files: int) -> int:
    """Half of what the limit leaves for sockets: each client may need an upstream."""
    return max(16, min(DEFAULT_MAX_CONNECTIONS, (open_files - RESERVED_FDS) // 2))


def live_connections(server: web.Server) -> Mapping[web.RequestHandler, Any] | None:
    """The server's own table of live connections, oldest first (aiohttp keeps it as a
    dict; its public `connections` copies it into a list on every call). None when
    this aiohttp keeps it otherwise: the cap then reads the public copy."""
    found = getattr(server, "_connections", None)
    return found if isinstance(found, dict) else None


class ShedConnection(asyncio.Protocol):
    """A client beyond the cap's headroom: told 503 at once, and closed.

    Whatever the client sends is read and dropped until it closes its side (at
    most SHED_LINGER_S): a socket closed with unread bytes is reset, and the
    client would see the reset instead of the 503. Only `lingering` such sockets
    wait at a time (they hold descriptors too); beyond, one is closed at once.
    """

    def __init__(self, cap: ConnectionCap, linger: bool) -> None:
        self._cap = cap
        self._linger = linger
        self._closer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP transport (uvloop's is no subclass of asyncio's, so no isinstance check).
        transport = cast(asyncio.Transport, transport)
        transport.write(SHED_ANSWER)
        if not self._linger or not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        self._closer = asyncio.get_running_loop().call_later(SHED_LINGER_S, transport.close)

    def data_received(self, data: bytes) -> None:
        """Dropped: the answer went out already."""

    def connection_lost(self, exc: Exception | None) -> None:
        if self._closer is not None:
            self._closer.cancel()
        if self._linger:
            self._cap.lingering -= 1


class ConnectionCap:
    """Protocol factory around aiohttp's server that keeps at most `limit` clients, and
    never more than `ceiling` open descriptors for them."""

    def __init__(self, server: web.Server, limit: int) -> None:
        self.server = server
        self.limit = limit
        self.ceiling = limit + headroom(limit)
        self._live = live_connections(server)
        if self._live is None:
            log.warning("aiohttp keeps its connections differently than expected: the "
                        "connection cap copies the list of connections on each accept")
        self._dropped: set[web.RequestHandler] = set()  # idle, closed: leaving now
        self._draining: set[web.RequestHandler] = set()  # busy, leave after their answer
        self.lingering = 0  # shed connections waiting for their client to read the 503
        self._closed_since_log = self._shed_since_log = 0
        self._closed_logged = self._shed_logged = -LOG_INTERVAL_S  # when each was last told

    def connections(self) -> Mapping[web.RequestHandler, Any]:
        live = self._live
        return live if live is not None else dict.fromkeys(self.server.connections)

    def __call__(self) -> asyncio.BaseProtocol:
        live = self.connections()
        if len(live) >= self.limit and not self._admits(live):
            linger = self.lingering < max(MAX_LINGERING, self.ceiling - self.limit)
            self.lingering += linger
            return ShedConnection(self, linger)
        handler = self.server()
        # aiohttp builds the handler itself; its class becomes the stamping one (same
        # layout, one method more), so the change stays on semproxy's listeners.
        handler.__class__ = StampedRequestHandler
        return handler

    def _admits(self, live: Mapping[web.RequestHandler, Any]) -> bool:
        """At the cap: ask the oldest connections to leave; whether a new one may come in."""
        self._dropped.intersection_update(live)  # those gone meanwhile are forgotten
        self._draining.intersection_update(live)
        staying = len(live) - len(self._dropped) - len(self._draining)
        # Over the cap: ask some to leave (a batch). At the headroom's top: a descriptor is
        # needed at once, and only an idle connection gives one back at once.
        leave = max(staying - self.limit + 1, 0) and max(staying - self.limit + 1,
                                                         self.limit // 64)
        now = max(len(live) - len(self._dropped) - self.ceiling + 1, 0)
        if leave or now:
            self._make_room(live, leave, now)
        admitted = len(live) - len(self._dropped) < self.ceiling
        self._shed_since_log += not admitted
        self._report()
        return admitted

    def _make_room(self, live: Mapping[web.RequestHandler, Any], wanted: int, now: int) -> None:
        """Close `wanted` connections (at least `now` of them idle): idle ones first, oldest
        first (the server keeps them in arrival order), as their descriptors come back at
        once; then, if too few were idle, ask the oldest busy ones to close after their
        answer. A batch, so that a burst of new clients does not pay this walk once each."""
        busy: list[web.RequestHandler] = []
        idle = 0
        for handler in live:
            if idle >= max(wanted, now):
                break
            if handler in self._dropped or handler in self._draining:
                continue
            if is_idle(handler):
                handler.force_close()
                self._dropped.add(handler)
                idle += 1
            elif len(busy) < wanted:
                busy.append(handler)
        for handler in busy[:wanted - idle]:
            handler.close()  # after the response in progress
            self._draining.add(handler)
        self._closed_since_log += min(wanted, idle + len(busy))

    def _report(self) -> None:
        """Each kind of event is told at once, then at most once per LOG_INTERVAL_S."""
        now = time.monotonic()
        if self._closed_since_log and now - self._closed_logged >= LOG_INTERVAL_S:
            log.warning("client connection cap reached (%d open, max_connections %d): "
                        "closed the %d oldest since the last report",
                        len(self.connections()), self.limit, self._closed_since_log)
            self._closed_logged, self._closed_since_log = now, 0
        if self._shed_since_log and now - self._shed_logged >= LOG_INTERVAL_S:
            log.warning("client connections shed: %d new clients got 503, %d connections "
                        "being open (max_connections %d, plus %d while busy ones finish)",
                        self._shed_since_log, self.ceiling, self.limit,
                        self.ceiling - self.limit)
            self._shed_logged, self._shed_since_log = now, 0


class StampedRequestHandler(web.RequestHandler):
    """aiohttp's connection handler, whose own error answers carry `ANSWER_HEADERS`."""

    __slots__ = ()

    def handle_error(self, *args: Any, **kwargs: Any) -> web.StreamResponse:
        response = super().handle_error(*args, **kwargs)
        response.headers.update(ANSWER_HEADERS)
        return response


def is_idle(handler: web.RequestHandler) -> bool:
    """Waiting for a request (none sent yet, or between keep-alive requests).

    aiohttp has no public test for this; it is the one its own keep-alive timer
    makes before closing a connection (a pending `_waiter`). `close()` alone does
    not release such a connection: it cancels the wait and leaves the socket open.
    """
    waiter = handler._waiter
    return waiter is not None and not waiter.done()


class CappedTCPSite(web.BaseSite):
    """aiohttp's TCP site, with `ConnectionCap` as the protocol factory."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, *, max_connections: int,
                 reuse_port: bool, backlog: int) -> None:
        super().__init__(runner, backlog=backlog)
        self._host = host
        self._port = port
        self._max_connections = max_connections
        self._reuse_port = reuse_port

    @property
    def name(self) -> str:
        return f"http://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        assert isinstance(server, web.Server)
        self._server = await asyncio.get_running_loop().create_server(
            ConnectionCap(server, self._max_connections), self._host, self._port,
            backlog=self._backlog, reuse_port=self._reuse_port)
