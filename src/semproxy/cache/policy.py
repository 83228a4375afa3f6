"""Which answers the cache keeps, and which of them only the exact layer may serve.

Only complete answers are kept: a Chat Completions object whose every choice
ended with a finish reason other than `content_filter`, without an `error`,
within `max_cache_body_size`. An answer served to a request with `n > 1`, or
one that calls tools, is kept for the exact layer only: a tool call carries
arguments taken from the very words of the prompt, and n samples were asked
for that request. A request above the route's `max_temperature` is neither
looked up nor kept: it asked for variety.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The finish reasons of an answer that ended on its own terms. `length` counts:
# `max_tokens` is part of the key, so the same request would stop at the same place.
COMPLETE = frozenset({"stop", "length", "tool_calls", "function_call"})


def request_refusal(payload: Mapping[str, Any], max_temperature: float | None) -> str | None:
    """Why this request must not use the cache at all, or None."""
    temperature = payload.get("temperature")
    if (max_temperature is not None and isinstance(temperature, int | float)
            and temperature > max_temperature):
        return "temperature"
    return None


def answer_refusal(completion: Any, size: int, max_size: int) -> str | None:
    """Why this answer must not be stored, or None when it may."""
    if size > max_size:
        return "too_large"
    if not isinstance(completion, dict) or "error" in completion:
        return "error"
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices:
        return "incomplete"
    for choice in choices:
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        if reason == "content_filter":
            return "content_filter"
        if reason not in COMPLETE:
            return "incomplete"
    return None


def is_exact_only(payload: Mapping[str, Any], completion: Mapping[str, Any]) -> bool:
    """True for an answer only the exact layer may serve (see the module docstring)."""
    n = payload.get("n")
    if isinstance(n, int) and n > 1:
        return True
    return any(isinstance(c, dict) and isinstance(c.get("message"), dict)
               and (c["message"].get("tool_calls") or c["message"].get("function_call"))
               for c in completion.get("choices", ()))
