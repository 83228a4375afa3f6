"""A client's request body as JSON: an object, or a chat request, else a 400.

Every protocol and the admin API parse bodies here; nothing in this module
knows about the server, so `semantic/`, `quality/` and the CLI can import the
protocols without it.
"""

from __future__ import annotations

from typing import Any

import orjson

from semproxy.errors import BadRequestError
from semproxy.types import is_deeper_than

# Deeper JSON is refused: nothing in a chat request nests this far, and orjson
# cannot serialise past 255 levels, so a deeper body would fail on its way upstream.
MAX_JSON_DEPTH = 128


def parse_object(body: bytes, what: str = "request body") -> dict[str, Any]:
    """A JSON object no deeper than MAX_JSON_DEPTH, or a 400 saying what is wrong with it."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequestError(f"{what} is not valid JSON: {exc.msg}") from exc
    if not isinstance(payload, dict):
        raise BadRequestError(f"{what} must be a JSON object")
    # A body cannot nest deeper than it has opening brackets (those inside strings
    # only over-count), so counting them, at C speed, spares the walk for nearly
    # every real request.
    if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH \
            and is_deeper_than(payload, MAX_JSON_DEPTH):
        raise BadRequestError(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    return payload


def parse_chat(body: bytes) -> dict[str, Any]:
    """The body as a chat request: a JSON object whose `messages` is a non-empty list."""
    payload = parse_object(body)
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequestError("'messages' must be a non-empty array")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequestError(f"messages[{i}] must be an object with a string 'role'")
    return payload
