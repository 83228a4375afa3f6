"""Upstream error envelopes: the one reader of an error body, whatever its shape.

OpenAI writes `{"error": {"message", "type", "param", "code"}}`, Anthropic
`{"type": "error", "error": {"type", "message"}}`: both keep the message and
the type in an `error` object, so one reader serves every converter.
"""

from __future__ import annotations

from typing import Any

import orjson

# What a converter's reading of a well-formed JSON body of the wrong shape can raise
# (a field of the wrong type: a string where an object belongs, a list for a number).
# A converter turns them into `UpstreamError` (an answer: 502) or `BadRequestError`
# (a request: 400); never a 500.
UNTRANSLATABLE = (ValueError, TypeError, AttributeError, KeyError, IndexError)


def error_object(body: bytes) -> dict[str, Any] | None:
    """The `error` object of an error body, None when there is none."""
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return error if isinstance(error, dict) else None


def read_error(body: bytes, status: int) -> tuple[str, str, str | None]:
    """Message, type and code of an upstream error body; a body without a message
    is described by its status."""
    error = error_object(body)
    if error is not None and isinstance(error.get("message"), str):
        code = error.get("code")
        return (error["message"], str(error.get("type") or "upstream_error"),
                code if isinstance(code, str) else None)
    return f"upstream answered HTTP {status}", "upstream_error", None
