"""Reading the client's request body within its size limit and deadline (the enter phase).

Parsing it (JSON, chat shape) is `protocols/body.py`; what semantic routing
reads from it is `semantic/query.py`.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from semproxy.errors import PayloadTooLargeError, RequestTimeoutError


async def read_body(request: web.Request, limit: int, timeout: float) -> bytes:
    """Read the whole body within `timeout` seconds (else 408), refusing (413) as soon
    as it exceeds `limit` bytes. The deadline covers the whole body, not each read,
    so a client trickling one byte a second cannot hold a connection and a buffer
    open indefinitely."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise PayloadTooLargeError(f"request body of {declared} bytes exceeds the limit of {limit}")
    content = request.content
    if content.is_eof():
        # The usual case for chat bodies: the whole body came with the headers and
        # is buffered already, so there is nothing to wait for and no deadline to arm.
        body = content.read_nowait()
        if len(body) > limit:
            raise PayloadTooLargeError(f"request body exceeds the limit of {limit} bytes")
        return body
    buf = bytearray()
    try:
        async with asyncio.timeout(timeout):
            while chunk := await content.readany():
                buf += chunk
                if len(buf) > limit:
                    raise PayloadTooLargeError(f"request body exceeds the limit of {limit} bytes")
    except TimeoutError as exc:
        raise RequestTimeoutError(f"request body not received within {timeout:g}s") from exc
    return bytes(buf)
