"""Where and how to call an instance (`Target`, `NetPolicy`) and the one seam that does it.

`HttpClients.post` is the only place in the gateway that opens upstream
connections and sends requests; everything else sees the `Reply` it returns.
Underneath is aiohttp's client: one session per pool shape (connection cap,
keep-alive), a connection pool per origin with a waiting queue beyond the
cap, proxies, TLS and HTTP parsing all from the library. The gateway adds its
policies on top: the pool guard (`pool.py`), decoding and size caps
(`reply.py`), a deadline per attempt, and no automatic re-sending of a POST.

A target is prepared once (`Target.call`): URL parsed, headers checked and
merged, proxy resolved from the environment, TLS context built, so a request
only adds its id and body.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import aiohttp
from aiohttp import ClientSession, ClientTimeout
from multidict import CIMultiDict, CIMultiDictProxy, istr
from yarl import URL

from semproxy.errors import (
    UpstreamConnectError,
    UpstreamConnectTimeoutError,
    UpstreamError,
)
from semproxy.providers.pool import GuardedConnector, check_aiohttp
from semproxy.providers.reply import Reply, upstream_error

MIB = 1024 * 1024
_BAD_HEADER_CHARS = ("\r", "\n", "\0")
_REQUEST_ID = istr("X-Request-Id")


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """PEM files for an instance's TLS: a CA bundle to trust, a client certificate and key."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


@dataclass(frozen=True, slots=True)
class NetPolicy:
    """Connection settings of a route or instance (APISIX names, converted to seconds)."""

    timeout_s: float = 30.0  # each wait: connect, each read, each SSE event
    ssl_verify: bool = True
    keepalive: bool = True
    keepalive_timeout_s: float = 60.0
    attempt_timeout_s: float | None = None  # a whole non-streamed attempt; None: timeout_s
    max_body: int = 32 * MIB  # a non-streamed body, after decompression
    max_event: int = 8 * MIB  # one SSE event
    max_connections: int = 4096  # per origin; more requests wait in a queue
    proxy: str | None = None  # None: from HTTPS_PROXY/HTTP_PROXY/NO_PROXY; "": no proxy
    tls: TlsFiles | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """Everything aiohttp needs for a request to one target, except the body."""

    url: URL
    headers: CIMultiDictProxy[str]  # aiohttp's own type: it takes them without converting
    proxy: URL | None
    proxy_headers: Mapping[str, str] | None  # Proxy-Authorization from the proxy URL
    ssl: ssl.SSLContext | bool
    timeout: ClientTimeout  # each wait: connect, each read
    attempt_s: float  # headers, and a body read whole, within this of sending
    pool: str  # which session (pool shape) serves it


@dataclass(frozen=True)
class Target:
    """Where and how to call one instance: resolved once when config loads."""

    url: str
    headers: Mapping[str, str]
    net: NetPolicy
    model: str | None = None
    label: str = ""  # safe to log: scheme://host/path, never query or credentials

    @cached_property
    def call(self) -> Call:
        """The prepared request; raises `UpstreamError` (on every use) for a target that
        cannot be called: bad URL, headers that are not valid HTTP, unreadable TLS files."""
        return prepare(self.url, self.headers, self.net, self.label or "upstream")


def prepare(url: str, headers: Mapping[str, str], net: NetPolicy, label: str) -> Call:
    parsed = URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise UpstreamError(f"upstream {label} has an unsupported URL")
    merged = {"Accept-Encoding": "identity", **_checked(headers, label)}
    if parsed.user is not None:  # user:password@ in the endpoint: HTTP Basic auth
        if any(name.lower() == "authorization" for name in merged):
            raise UpstreamError(f"upstream {label}: the endpoint has user:password and an "
                                f"Authorization header; give only one")
        merged["Authorization"] = _basic(parsed, label)
        parsed = parsed.with_user(None)
    proxy = _proxy_for(parsed, net.proxy)
    proxy_headers = None
    if proxy is not None and proxy.user is not None:
        # aiohttp sends proxy headers on a CONNECT only: a plain http request carries its own.
        proxy_headers = {"Proxy-Authorization": _basic(proxy, label)}
        if parsed.scheme == "http":
            merged.update(proxy_headers)
            proxy_headers = None
    return Call(
        url=parsed, headers=CIMultiDictProxy(CIMultiDict(merged)),
        proxy=proxy.with_user(None) if proxy else None,
        proxy_headers=proxy_headers,
        ssl=_ssl(net, label),
        timeout=ClientTimeout(sock_connect=net.timeout_s, sock_read=net.timeout_s),
        attempt_s=net.attempt_timeout_s or net.timeout_s,
        pool=f"{net.max_connections}/{net.keepalive_timeout_s}/{net.keepalive}",
    )


def _basic(url: URL, label: str) -> str:
    try:
        return aiohttp.encode_basic_auth(url.user or "", url.password or "")
    except ValueError as exc:
        raise UpstreamError(f"upstream {label}: user:password in a URL is not valid") from exc


def _checked(headers: Mapping[str, str], label: str) -> dict[str, str]:
    for name, value in headers.items():
        if (not name or ":" in name or any(c.isspace() for c in name)
                or any(c in name or c in value for c in _BAD_HEADER_CHARS)):
            raise UpstreamError(f"upstream {label}: a configured header is not valid HTTP")
    return dict(headers)


def _proxy_for(url: URL, setting: str | None) -> URL | None:
    """The proxy a target goes through: its setting, else the standard environment."""
    if setting is not None:
        return URL(setting) if setting else None
    proxies = urllib.request.getproxies_environment()
    found = proxies.get(url.scheme)
    if not found or urllib.request.proxy_bypass_environment(  # type: ignore[attr-defined]
            url.host or "", proxies):
        return None
    return URL(found if "://" in found else f"http://{found}")


def _ssl(net: NetPolicy, label: str) -> ssl.SSLContext | bool:
    """aiohttp's default context (True), no verification (False), or the instance's own."""
    tls = net.tls
    if tls is None:
        return net.ssl_verify
    try:
        context = ssl.create_default_context(cafile=tls.ca_file)
        if tls.cert_file:
            context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise UpstreamError(f"upstream {label}: cannot load its TLS files "
                            f"({type(exc).__name__}: {exc.strerror or exc})") from exc
    if not net.ssl_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class HttpClients:
    """The upstream client of one worker: aiohttp sessions, created in the running loop."""

    def __init__(self) -> None:
        check_aiohttp()  # fail at start, not on the first hostile upstream
        self._sessions: dict[str, ClientSession] = {}

    def _open(self, call: Call, net: NetPolicy) -> ClientSession:
        connector = GuardedConnector(
            limit=0, limit_per_host=net.max_connections, force_close=not net.keepalive,
            keepalive_timeout=net.keepalive_timeout_s if net.keepalive else None)
        session = ClientSession(
            connector=connector, auto_decompress=False, trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(), skip_auto_headers=("User-Agent",),
            timeout=ClientTimeout(total=None))
        self._sessions[call.pool] = session
        return session

    async def post(self, target: Target, data: bytes, request_id: str = "") -> Reply:
        """POST and return the reply once its headers arrived; the caller releases it.

        The headers must arrive within the attempt deadline (`attempt_timeout`),
        and so must the whole body when it is read with `Reply.read`; a stream
        read with `iter_chunks` is bounded per read instead. Never sent twice:
        aiohttp re-sends only idempotent methods, and the failover loop decides
        whether another instance gets the request.
        Failures are the gateway's errors: `UpstreamConnectError` (nothing was
        sent), `UpstreamTimeoutError` or `UpstreamError` (502, e.g. a status
        outside 100-599 or an unsupported encoding).
        """
        call = target.call
        session = self._sessions.get(call.pool) or self._open(call, target.net)
        headers: CIMultiDictProxy[str] | CIMultiDict[str] = call.headers
        if request_id:  # a copy in C; a dict would be converted on every request
            headers = call.headers.copy()
            headers[_REQUEST_ID] = request_id
        label = target.label or "upstream"
        deadline = asyncio.get_running_loop().time() + call.attempt_s
        try:
            async with asyncio.timeout_at(deadline):
                resp = await session.post(
                    call.url, data=data, headers=headers, proxy=call.proxy,
                    proxy_headers=call.proxy_headers, ssl=call.ssl, allow_redirects=False,
                    timeout=call.timeout)
        except aiohttp.ConnectionTimeoutError as exc:
            raise UpstreamConnectTimeoutError(f"upstream {label} timed out") from exc
        except aiohttp.ClientConnectorError as exc:  # refused, DNS, TLS handshake, proxy
            raise UpstreamConnectError(
                f"upstream {label} unreachable: {type(exc).__name__}") from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise upstream_error(exc, label) from exc
        if not 100 <= resp.status <= 599:
            resp.close()
            raise UpstreamError(f"upstream {label} answered an invalid status {resp.status}",
                                f"the upstream answered an invalid status {resp.status}")
        try:
            return Reply(resp, label, target.net.max_body, deadline)
        except UpstreamError:
            resp.close()
            raise

    async def aclose(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.close()

