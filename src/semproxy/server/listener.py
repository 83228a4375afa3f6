"""Client sockets: the open-file limit, a cap on client connections, and the headers of
answers aiohttp writes itself.

Every client connection holds a file descriptor, and so does every upstream
connection, log file and the listener itself. When idle clients use up the
process's descriptors, `accept()` fails and nobody is answered, `/healthz`
included, until keep-alive timeouts free some. So a worker raises its soft
open-file limit to the hard limit at start, and keeps client connections under
a cap: a new connection beyond the cap asks the oldest ones to close (an idle
one closes at once; a busy one after its current response), the way nginx reuses
keep-alive connections when it runs out, so a new client is always served.

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
from typing import Any

from aiohttp import web

log = logging.getLogger("semproxy.server")

# Every answer names the gateway without versions (aiohttp's default banner is
# `Python/3.11 aiohttp/3.x`: a free hint for anyone matching known flaws), and no
# browser may guess a JSON error or an event stream to be HTML.
ANSWER_HEADERS = {"Server": "semproxy", "X-Content-Type-Options": "nosniff"}

# Descriptors kept out of the client budget: listeners, logs, config, model files.
RESERVED_FDS = 64
# Without an explicit setting, at most this many client connections per worker.
DEFAULT_MAX_CONNECTIONS = 4096
# At most one "cap reached" log line per this many seconds.
LOG_INTERVAL_S = 10.0


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


def default_max_connections(open_files: int) -> int:
    """Half of what the limit leaves for sockets: each client may need an upstream."""
    return max(16, min(DEFAULT_MAX_CONNECTIONS, (open_files - RESERVED_FDS) // 2))


class ConnectionCap:
    """Protocol factory around aiohttp's server that keeps at most `limit` clients."""

    def __init__(self, server: web.Server, limit: int) -> None:
        self.server = server
        self.limit = limit
        self._closed_since_log = 0
        self._last_log = -LOG_INTERVAL_S

    def __call__(self) -> asyncio.BaseProtocol:
        if len(self.server.connections) >= self.limit:
            self._make_room()
        handler = self.server()
        # aiohttp builds the handler itself; its class becomes the stamping one (same
        # layout, one method more), so the change stays on semproxy's listeners.
        handler.__class__ = StampedRequestHandler
        return handler

    def _make_room(self) -> None:
        # Oldest first (the server keeps them in arrival order); a batch, so that a
        # burst of new clients does not pay this walk once each.
        connections = self.server.connections
        excess = len(connections) - self.limit + 1
        batch = connections[:max(excess, self.limit // 64, 1)]
        for handler in batch:
            if is_idle(handler):
                handler.force_close()
            else:
                handler.close()  # after the response in progress
        self._closed_since_log += len(batch)
        now = time.monotonic()
        if now - self._last_log >= LOG_INTERVAL_S:
            log.warning("client connection cap reached (%d open, max_connections %d): "
                        "closed the %d oldest since the last report",
                        len(connections), self.limit, self._closed_since_log)
            self._last_log = now
            self._closed_since_log = 0


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
