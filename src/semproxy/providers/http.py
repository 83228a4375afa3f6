"""The shared HTTP client: one aiohttp session (keep-alive pool) per connection policy.

Sessions are created lazily inside the running loop and closed with the worker.
Upstream hosts share a session's connector, which keeps one idle pool per host,
so every request to the same upstream reuses warm connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp
from yarl import URL

from semproxy.errors import UpstreamError, UpstreamTimeoutError


@dataclass(frozen=True, slots=True)
class NetPolicy:
    """Connection settings of a route (APISIX names, converted to seconds)."""

    timeout_s: float = 30.0
    ssl_verify: bool = True
    keepalive: bool = True
    keepalive_timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class Target:
    """Where and how to call one instance: resolved once when config loads."""

    url: str
    headers: Mapping[str, str]
    net: NetPolicy
    model: str | None = None
    label: str = ""  # safe to log: scheme://host/path, never query or credentials


class HttpClients:
    def __init__(self) -> None:
        self._sessions: dict[tuple[bool, float], aiohttp.ClientSession] = {}
        self._urls: dict[str, URL] = {}
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}

    def session(self, keepalive: bool, keepalive_timeout_s: float) -> aiohttp.ClientSession:
        key = (keepalive, keepalive_timeout_s)
        session = self._sessions.get(key)
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(
                limit=0,
                force_close=not keepalive,
                keepalive_timeout=keepalive_timeout_s if keepalive else None,
                ttl_dns_cache=300,
            )
            session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=True,
                skip_auto_headers=("User-Agent",),
                # Never keep upstream cookies: they would be replayed for other clients.
                cookie_jar=aiohttp.DummyCookieJar(),
            )
            self._sessions[key] = session
        return session

    async def post(self, target: Target, data: bytes, request_id: str = ""
                   ) -> aiohttp.ClientResponse:
        """POST and return the response once headers arrived; the caller releases it.

        The route timeout bounds each wait (connect, then every read), as APISIX's
        does, not the whole exchange: a total deadline would cut off a long stream
        whose chunks keep arriving. Transport failures are translated here into the
        gateway's error tree.
        """
        net = target.net
        session = self.session(net.keepalive, net.keepalive_timeout_s)
        try:
            return await session.post(
                self._url(target.url),
                data=data,
                headers={**target.headers, "X-Request-Id": request_id} if request_id
                else target.headers,
                timeout=self._timeout(net.timeout_s),
                ssl=net.ssl_verify,
            )
        except TimeoutError as exc:
            raise UpstreamTimeoutError(f"upstream {target.label} timed out") from exc
        except aiohttp.ClientError as exc:
            reason = type(exc).__name__
            raise UpstreamError(f"upstream {target.label} unreachable: {reason}") from exc

    # Parsed URLs and timeout objects are built once per target rather than on every
    # request: parsing a URL string is one of the larger fixed costs of a client call.
    def _url(self, url: str) -> URL:
        parsed = self._urls.get(url)
        if parsed is None:
            parsed = self._urls[url] = URL(url, encoded="%" in url)
        return parsed

    def _timeout(self, seconds: float) -> aiohttp.ClientTimeout:
        timeout = self._timeouts.get(seconds)
        if timeout is None:
            timeout = self._timeouts[seconds] = aiohttp.ClientTimeout(
                total=None, connect=seconds, sock_read=seconds)
        return timeout

    async def aclose(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()
