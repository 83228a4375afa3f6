"""One upstream answer as the gateway reads it: decoded, capped, and freed on every exit.

aiohttp's own decompression is switched off: it inflates without a limit, so a
small gzip body can expand to gigabytes. Here gzip and deflate are inflated
with `zlib` and `max_length`, a chunk at a time, so no more than one output
chunk exists beyond what the reader asked for; a whole body is capped *after*
decompression (`max_body`), and a stream is pulled only as fast as the client
takes it, so the transport's back-pressure holds for compressed streams too.
A body over its cap, a truncated gzip stream or a broken connection becomes an
`UpstreamError` (502), and the connection is closed rather than reused.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from multidict import CIMultiDictProxy

from semproxy.errors import UpstreamError, UpstreamTimeoutError
from semproxy.transport.deadline import Deadline
from semproxy.transport.pool import within
from semproxy.transport.target import Target

DECODED_CHUNK = 64 * 1024  # largest piece inflated at once


def upstream_failure(exc: BaseException, label: str) -> UpstreamError:
    """An aiohttp or asyncio failure in the gateway's words (never with its details)."""
    if isinstance(exc, UpstreamError):
        return exc
    if isinstance(exc, TimeoutError):
        return UpstreamTimeoutError(f"upstream {label} timed out")
    if isinstance(exc, aiohttp.ClientPayloadError):
        return UpstreamError(f"upstream {label} sent a broken body")
    return UpstreamError(f"upstream {label} closed the connection or sent an invalid answer")


def make_decoder(encoding: str, label: str) -> Any:
    """A zlib decompressor for the Content-Encoding, None for identity, else an error."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return None
    if name in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if name == "deflate":
        return zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib-wrapped, as RFC 9110 says
    raise UpstreamError(f"upstream {label} answered in an unsupported content encoding")


class AiohttpReply:
    """An upstream answer from aiohttp's client (`transport.base.Reply`).

    `release` gives the connection back when the body was read whole (else it
    closes it); `abort` closes it at once. Both drop every reference the reply
    holds, so an abandoned answer leaves no cycle behind for the GC to find.
    """

    __slots__ = ("_deadline", "_decoder", "_label", "_max_body", "_read_s", "_resp",
                 "content_type", "headers", "status")

    def __init__(self, resp: aiohttp.ClientResponse, target: Target, deadline: Deadline
                 ) -> None:
        self._resp: aiohttp.ClientResponse | None = resp
        self._label = target.label or "upstream"
        self._max_body = target.net.max_body
        self._read_s = target.net.timeout_s  # each read of a stream
        self._deadline = deadline  # by which `read` must have the whole body
        self.status = resp.status
        self.headers: CIMultiDictProxy[str] = resp.headers
        self.content_type = resp.headers.get("Content-Type", "application/json")
        self._decoder: Any = None
        encoding = resp.headers.get("Content-Encoding")
        if encoding is not None:
            self._decoder = make_decoder(encoding, self._label)

    async def read(self) -> bytes:
        """The whole decoded body, at most `max_body` bytes, by the attempt deadline;
        the reply is released after."""
        resp = self._resp
        assert resp is not None
        try:
            if resp.content.is_eof() and self._decoder is None:  # all here: nothing to wait for
                body = await self._body(resp)
            else:
                with self._deadline:
                    body = await self._body(resp)
        except asyncio.IncompleteReadError as exc:
            self.abort()
            raise UpstreamError(f"upstream {self._label} sent a broken body") from exc
        except (aiohttp.ClientError, TimeoutError, UpstreamError) as exc:
            self.abort()
            raise upstream_failure(exc, self._label) from exc
        self.release()
        return body

    async def _body(self, resp: aiohttp.ClientResponse) -> bytes:
        length = resp.content_length
        if self._decoder is None and length is not None:
            if length > self._max_body:
                raise self._too_large()
            return await resp.content.readexactly(length) if length else b""
        return b"".join([chunk async for chunk in self._decoded(self._max_body)])

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        """Decoded body bytes, read from the upstream only as fast as they are taken, each
        read within the route's `timeout` (the attempt deadline no longer applies)."""
        resp = self._resp
        assert resp is not None
        self._deadline.cancel()
        if resp.connection is not None:  # else the body is all here: nothing to wait for
            within(resp.connection.protocol, self._read_s)
        try:
            async for chunk in self._decoded(None):
                yield chunk
        except (aiohttp.ClientError, TimeoutError, UpstreamError) as exc:
            self.abort()
            raise upstream_failure(exc, self._label) from exc

    async def _decoded(self, cap: int | None) -> AsyncIterator[bytes]:
        resp = self._resp
        assert resp is not None
        content, decoder, size = resp.content, self._decoder, 0
        while True:
            raw = await content.readany()
            if not raw:
                break
            if decoder is None:
                size += len(raw)
                if cap is not None and size > cap:
                    raise self._too_large()
                yield raw
                continue
            while raw:
                try:
                    out = decoder.decompress(raw, DECODED_CHUNK)
                except zlib.error as exc:
                    raise UpstreamError(f"upstream {self._label} sent a corrupt body",
                                        "the upstream sent a corrupt compressed body") from exc
                raw = decoder.unconsumed_tail
                size += len(out)
                if cap is not None and size > cap:
                    raise self._too_large()
                if out:
                    yield out
        if decoder is not None and not decoder.eof:
            raise UpstreamError(f"upstream {self._label} sent a truncated compressed body",
                                "the upstream sent a truncated compressed body")

    def _too_large(self) -> UpstreamError:
        reason = f"answered more than {self._max_body} bytes (max_resp_body_size)"
        return UpstreamError(f"upstream {self._label} {reason}", f"the upstream {reason}")

    def release(self) -> None:
        self._deadline.cancel()
        resp, self._resp, self._decoder = self._resp, None, None
        if resp is not None:
            resp.release()

    def abort(self) -> None:
        self._deadline.cancel()
        resp, self._resp, self._decoder = self._resp, None, None
        if resp is not None:
            resp.close()
