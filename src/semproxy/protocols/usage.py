"""Token usage as each protocol reports it, read into one `Usage`.

Chat Completions (and embeddings) answers carry `usage.prompt_tokens` and
`completion_tokens` (cached prompt tokens in `prompt_tokens_details`);
Anthropic's carry `input_tokens` (without the cached ones), the two cache
counts and `output_tokens`, and a stream spreads them over `message_start`
and `message_delta`. `Usage.input` always counts every prompt token, so the
two read the same for the same prompt.
"""

from __future__ import annotations

from typing import Any

import orjson

from semproxy.types import Usage

ANTHROPIC_COUNTS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                    "cache_read_input_tokens")
# No answer has more tokens than this (the largest context windows hold a few million):
# a count above it, like a negative one, is not a count but a broken upstream, and is
# read as not reported rather than billed or relayed (2**62 would overflow a sum).
MAX_COUNT = 1 << 32


def _count(value: Any) -> int | None:
    return value if type(value) is int and 0 <= value <= MAX_COUNT else None


def chat_usage(node: Any) -> Usage | None:
    """The `usage` object of a Chat Completions (or embeddings) answer; None when it
    holds no count."""
    if not isinstance(node, dict):
        return None
    # Every answer of a stream or a completion passes here: no helper calls.
    given, made = node.get("prompt_tokens"), node.get("completion_tokens")
    given = given if type(given) is int and 0 <= given <= MAX_COUNT else None
    made = made if type(made) is int and 0 <= made <= MAX_COUNT else None
    if given is None and made is None and _count(node.get("total_tokens")) is None:
        return None
    details = node.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    return Usage(input=given or 0, output=made or 0, cached_input=cached or 0)


def anthropic_counts(node: Any) -> dict[str, int]:
    """The counts of an Anthropic `usage` object (absent or invalid ones left out)."""
    if not isinstance(node, dict):
        return {}
    return {k: v for k in ANTHROPIC_COUNTS if (v := _count(node.get(k))) is not None}


def anthropic_usage(counts: dict[str, int]) -> Usage | None:
    """`Usage` of Anthropic counts (merged from a stream's events, or one answer's)."""
    if not counts:
        return None
    read = counts.get("cache_read_input_tokens", 0)
    given = counts.get("input_tokens", 0) + counts.get("cache_creation_input_tokens", 0) + read
    return Usage(input=given, output=counts.get("output_tokens", 0), cached_input=read)


def body_usage(body: bytes, anthropic: bool = False) -> Usage | None:
    """The usage a whole answer reports, found without a parse when it has none."""
    if b'"usage"' not in body:
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    if anthropic:
        return anthropic_usage(anthropic_counts(data.get("usage")))
    return chat_usage(data.get("usage"))


def chat_usage_object(usage: Usage | None) -> dict[str, Any]:
    """`usage` in Chat Completions' words (zeros when nothing was reported), cached prompt
    tokens in `prompt_tokens_details` when there are any."""
    given, made = (usage.input, usage.output) if usage is not None else (0, 0)
    out: dict[str, Any] = {"prompt_tokens": given, "completion_tokens": made,
                           "total_tokens": given + made}
    if usage is not None and usage.cached_input:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_input}
    return out
