"""`AiohttpTransport`: the one place in the gateway that opens upstream connections.

Underneath is aiohttp's client: one session per pool shape (connection cap,
keep-alive), a connection pool per origin with a waiting queue beyond the
cap, proxies, TLS and HTTP parsing all from the library. The gateway adds its
policies on top: the pool guard (`pool.py`), decoding and size caps
(`reply.py`), a deadline per attempt, and no automatic re-sending of a POST.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import aiohttp
from aiohttp import ClientSession, ClientTimeout
from multidict import CIMultiDict, CIMultiDictProxy, istr

from semproxy.errors import UpstreamConnectError, UpstreamConnectTimeoutError, UpstreamError
from semproxy.transport.deadline import Deadline
from semproxy.transport.pool import GuardedConnector
from semproxy.transport.reply import AiohttpReply, upstream_failure
from semproxy.transport.target import Call, PoolShape, Target

_REQUEST_ID = istr("X-Request-Id")


class AiohttpTransport:
    """The upstream client of one worker: aiohttp sessions, created in the running loop."""

    def __init__(self) -> None:
        self._sessions: dict[PoolShape, ClientSession] = {}

    def _open(self, shape: PoolShape) -> ClientSession:
        connector = GuardedConnector(
            idle_cap=shape.keepalive_pool, limit=0, limit_per_host=shape.max_connections,
            force_close=not shape.keepalive,
            keepalive_timeout=shape.keepalive_timeout_s if shape.keepalive else None)
        session = ClientSession(
            connector=connector, auto_decompress=False, trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(), skip_auto_headers=("User-Agent",),
            timeout=ClientTimeout(total=None))
        self._sessions[shape] = session
        return session

    def post(self, target: Target, data: bytes, request_id: str = ""
             ) -> Coroutine[Any, Any, AiohttpReply]:
        """POST and return the reply once its headers arrived; the caller releases it.

        The headers must arrive within the attempt deadline (`attempt_timeout`),
        and so must the whole body when it is read with `read`: one timer for
        both (`deadline.py`), and aiohttp's per-read timer only when the route's
        `timeout` is shorter than the attempt's. A stream read with
        `iter_chunks` is bounded per read instead (`timeout`). Never sent twice:
        aiohttp re-sends only idempotent methods, and the failover loop decides
        whether another instance gets the request. A status outside 200-599 (an
        interim 1xx is no answer: 101 would switch the client's connection to
        another protocol) or an unsupported encoding is an `UpstreamError` (502).
        """
        call = target.call
        headers: CIMultiDictProxy[str] | CIMultiDict[str] = call.headers
        if request_id:  # a copy in C; a dict would be converted on every request
            headers = call.headers.copy()
            headers[_REQUEST_ID] = request_id
        return self._send("POST", target, call, headers, data)

    def get(self, target: Target) -> Coroutine[Any, Any, AiohttpReply]:
        """GET, as health probes do: the reply once its headers arrived."""
        call = target.call
        return self._send("GET", target, call, call.headers, None)

    async def _send(self, method: str, target: Target, call: Call,
                    headers: CIMultiDictProxy[str] | CIMultiDict[str], data: bytes | None
                    ) -> AiohttpReply:
        session = self._sessions.get(call.pool) or self._open(call.pool)
        loop = asyncio.get_running_loop()
        deadline = Deadline(loop, loop.time() + call.attempt_s)
        try:
            with deadline:
                resp = await session.request(
                    method, call.url, data=data, headers=headers, proxy=call.proxy,
                    proxy_headers=call.proxy_headers, ssl=call.ssl, allow_redirects=False,
                    timeout=call.timeout)
            if not 200 <= resp.status <= 599:
                resp.close()
                what = "an interim status" if 100 <= resp.status < 200 else "an invalid status"
                raise UpstreamError(f"upstream {target.label or 'upstream'} answered {what} "
                                    f"{resp.status}", f"the upstream answered {what} {resp.status}")
            try:
                return AiohttpReply(resp, target, deadline)
            except UpstreamError:
                resp.close()
                raise
        except BaseException as exc:  # whatever ended the attempt, its timer goes with it
            deadline.cancel()
            if isinstance(exc, aiohttp.ClientError | TimeoutError):
                raise failure(exc, target.label or "upstream") from exc
            raise

    async def aclose(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.close()


def failure(exc: aiohttp.ClientError | TimeoutError, label: str) -> UpstreamError:
    """Why an upstream call failed before its answer's headers, in the gateway's words."""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return UpstreamConnectTimeoutError(f"upstream {label} timed out")
    if isinstance(exc, aiohttp.ClientConnectorError):  # refused, DNS, TLS handshake, proxy
        return UpstreamConnectError(f"upstream {label} unreachable: {type(exc).__name__}")
    return upstream_failure(exc, label)
