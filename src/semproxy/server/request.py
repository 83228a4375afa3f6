"""Reading and checking the client's request: size limit, JSON, chat shape.

What semantic routing reads from it is `semantic/query.py`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from semproxy.errors import BadRequestError, PayloadTooLargeError, RequestTimeoutError
from semproxy.types import is_deeper_than

# Deeper JSON is refused: nothing in a chat request nests this far, and orjson
# cannot serialise past 255 levels, so a deeper body would fail on its way upstream.
MAX_JSON_DEPTH = 128


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


def parse_object(body: bytes, what: str = "request body") -> dict[str, Any]:
    """A JSON object, or a 400 saying what is wrong with it."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequestError(f"{what} is not valid JSON: {exc.msg}") from exc
    if not isinstance(payload, dict):
        raise BadRequestError(f"{what} must be a JSON object")
    return payload


def parse_chat(body: bytes) -> dict[str, Any]:
    """The body as a chat request: a JSON object whose `messages` is a non-empty list."""
    payload = parse_object(body)
    # A body cannot nest deeper than it has opening brackets (those inside strings
    # only over-count), so counting them, at C speed, spares the walk for nearly
    # every real request.
    if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH \
            and is_deeper_than(payload, MAX_JSON_DEPTH):
        raise BadRequestError(f"request body nests deeper than {MAX_JSON_DEPTH} levels")
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequestError("'messages' must be a non-empty array")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequestError(f"messages[{i}] must be an object with a string 'role'")
    return payload
