"""Where and how to call an instance (`Target`, `NetPolicy`) and the client that does it.

`HttpClients` is the worker's upstream client; its connections and the wire
format live in `semproxy.providers.wire`. Pools are created lazily inside the
running loop and closed with the worker; requests to the same upstream reuse
warm keep-alive connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from semproxy.providers.wire import ConnectionPool, Prepared, WireReply, prepare


@dataclass(frozen=True, slots=True)
class NetPolicy:
    """Connection settings of a route (APISIX names, converted to seconds)."""

    timeout_s: float = 30.0
    ssl_verify: bool = True
    keepalive: bool = True
    keepalive_timeout_s: float = 60.0


@dataclass(frozen=True)
class Target:
    """Where and how to call one instance: resolved once when config loads."""

    url: str
    headers: Mapping[str, str]
    net: NetPolicy
    model: str | None = None
    label: str = ""  # safe to log: scheme://host/path, never query or credentials

    @cached_property
    def wire(self) -> Prepared:
        """The request head and connection settings, rendered on first use and kept
        for as long as the config version that owns this target. A target whose
        headers are not valid HTTP raises `UpstreamError` on every use."""
        net = self.net
        return prepare(self.url, self.headers, self.label or "upstream", net.timeout_s,
                       net.ssl_verify, net.keepalive, net.keepalive_timeout_s)


class HttpClients:
    """The upstream client of one worker: keep-alive pools per origin.

    A target's head (request line, Host and its headers, `Target.wire`) is
    rendered once and reused by every request to it; a request adds its
    X-Request-Id, its length and its body, and goes out in one write.
    """

    def __init__(self) -> None:
        self._pool = ConnectionPool()

    async def post(self, target: Target, data: bytes, request_id: str = "") -> WireReply:
        """POST and return the reply once its headers arrived; the caller releases it.

        Transport failures are raised as the gateway's errors: `UpstreamConnectError`
        (no connection), `UpstreamTimeoutError` (a wait took longer than the route
        timeout) or `UpstreamError` (the connection broke or the answer was not HTTP).
        """
        prepared = target.wire
        rid = b"X-Request-Id: " + request_id.encode("latin-1") + b"\r\n" if request_id else b""
        request = b"%s%sContent-Length: %d\r\n\r\n%s" % (prepared.head, rid, len(data), data)
        return await self._pool.request(prepared, request)

    async def aclose(self) -> None:
        self._pool.close()
