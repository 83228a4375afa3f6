"""Where and how to call an upstream (`Target`, `NetPolicy`), resolved once when config loads.

A target is prepared once (`Target.call`): URL parsed, headers checked and
merged, proxy resolved from the setting or the environment, TLS context built,
so a request only adds its id and body. Health probes are targets too: the
same proxy and TLS files apply to them as to the instance they probe.
"""

from __future__ import annotations

import os
import ssl
import stat
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple
from urllib.parse import urlsplit

import aiohttp
from aiohttp import ClientTimeout
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from semproxy.errors import UpstreamError

MIB = 1024 * 1024
_BAD_HEADER_CHARS = ("\r", "\n", "\0")


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsFiles:
    """PEM files for an instance's TLS: a CA bundle to trust, a client certificate and key."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


class PoolShape(NamedTuple):
    """What sets one connection pool apart from another: the upstream calls of every
    target with the same shape share one aiohttp session (and its pool per origin).
    A tuple, so the per-request session lookup hashes it in C."""

    max_connections: int  # per origin; more requests wait in a queue
    keepalive: bool
    keepalive_timeout_s: float
    keepalive_pool: int | None  # idle connections kept per origin; None: all of them


@dataclass(frozen=True, slots=True, kw_only=True)
class NetPolicy:
    """Connection settings of a route or instance (APISIX names, converted to seconds)."""

    timeout_s: float = 30.0  # each wait: connect, each read, each SSE event
    ssl_verify: bool = True
    keepalive: bool = True
    keepalive_timeout_s: float = 60.0
    keepalive_pool: int | None = None  # idle connections kept per origin; None: no cap
    attempt_timeout_s: float | None = None  # a whole non-streamed attempt; None: timeout_s
    max_body: int = 32 * MIB  # a non-streamed body, after decompression
    max_event: int = 8 * MIB  # one SSE event
    max_connections: int = 4096
    proxy: str | None = None  # None: from HTTPS_PROXY/HTTP_PROXY/NO_PROXY; "": no proxy
    tls: TlsFiles | None = None

    def __post_init__(self) -> None:
        for name in ("timeout_s", "keepalive_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.attempt_timeout_s is not None and not self.attempt_timeout_s > 0:
            raise ValueError("attempt_timeout_s must be positive")
        if self.keepalive_pool is not None and self.keepalive_pool < 1:
            raise ValueError("keepalive_pool must be at least 1")
        for name in ("max_body", "max_event", "max_connections"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")

    @property
    def pool(self) -> PoolShape:
        return PoolShape(max_connections=self.max_connections, keepalive=self.keepalive,
                         keepalive_timeout_s=self.keepalive_timeout_s,
                         keepalive_pool=self.keepalive_pool)


@dataclass(frozen=True, slots=True)
class Call:
    """Everything aiohttp needs for a request to one target, except the body."""

    url: URL
    headers: CIMultiDictProxy[str]  # aiohttp's own type: it takes them without converting
    proxy: URL | None
    proxy_headers: Mapping[str, str] | None  # Proxy-Authorization from the proxy URL
    ssl: ssl.SSLContext | bool
    timeout: ClientTimeout  # aiohttp's own bounds: connect, and each read (see read_bounds)
    attempt_s: float  # headers, and a body read whole, within this of sending
    pool: PoolShape  # which session serves it


@dataclass(frozen=True)
class Target:
    """Where and how to call one instance (or probe it): resolved once when config loads."""

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


def safe_label(url: str) -> str:
    """scheme://host:port/path of `url`: what logs and error messages may show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


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
        timeout=read_bounds(net),
        attempt_s=net.attempt_timeout_s or net.timeout_s,
        pool=net.pool,
    )


def read_bounds(net: NetPolicy) -> ClientTimeout:
    """aiohttp's bounds on one attempt: connecting, always; each read, only when the
    attempt may last longer than `timeout_s` (`attempt_timeout` set above `timeout`).

    Otherwise the attempt deadline (`deadline.py`), no later than any read's bound,
    is the only timer of a whole answer; a stream's reads are bounded when it is
    read as one (`transport.pool.within`).
    """
    attempt_s = net.attempt_timeout_s or net.timeout_s
    return ClientTimeout(sock_connect=net.timeout_s,
                         sock_read=net.timeout_s if attempt_s > net.timeout_s else None)


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


def check_tls_file(path: str | None, field: str, label: str) -> None:
    """`path` is a regular file, or an `UpstreamError` that says what it is instead.

    Opening a FIFO blocks until someone writes to it, and a device can be read
    forever: the TLS files are read only when they are regular files.
    """
    if path is None:
        return
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        problem = "does not exist"
    except PermissionError:
        problem = "cannot be read (permission denied)"
    except OSError as exc:
        problem = f"cannot be read ({exc.strerror})"
    else:
        if stat.S_ISREG(mode):
            return
        problem = "is a directory, not a file" if stat.S_ISDIR(mode) else \
            "is not a regular file (a FIFO, socket or device)"
    raise UpstreamError(f"upstream {label}: cannot load its TLS files (tls.{field} {path} "
                        f"{problem})")


def _ssl(net: NetPolicy, label: str) -> ssl.SSLContext | bool:
    """aiohttp's default context (True), no verification (False), or the instance's own."""
    tls = net.tls
    if tls is None:
        return net.ssl_verify
    for field, path in (("ca_file", tls.ca_file), ("cert_file", tls.cert_file),
                        ("key_file", tls.key_file)):
        check_tls_file(path, field, label)
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
