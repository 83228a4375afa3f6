"""Small shared types: the shape of parsed JSON documents, and token usage."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any

JSONObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens of one answer, in the provider's terms, whatever protocol carried them.

    Read once, by the converter or provider that read the answer (whole or
    streamed), and handed to everything that needs it: metrics, the access
    line, limits and budgets, the response cache. `input` counts every prompt
    token, the cached ones included; `cached_input` is the part the provider
    served from its prompt cache (billed at its own price). `estimated` marks
    counts the gateway made itself because the upstream reported none (a
    stream cut short, a provider without usage).
    """

    input: int = 0
    output: int = 0
    cached_input: int = 0
    estimated: bool = False

    @property
    def total(self) -> int:
        return self.input + self.output


def is_deeper_than(node: Any, limit: int) -> bool:
    """True when arrays/objects nest more than `limit` levels.

    Iterative on purpose: a hostile document nested thousands of levels deep
    must not exhaust the interpreter's recursion limit while being checked.
    Request bodies and config documents both go through it before anything
    recursive (serialisers, validators) touches them.
    """
    stack: list[tuple[Any, int]] = [(node, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def content_text(content: Any, sep: str = " ", kinds: Container[str] | None = None) -> str:
    """The text of a message's `content`: a string as it is, or the `text` of the parts
    of an array (only parts whose `type` is in `kinds`, when given) joined by `sep`.

    Chat Completions, Anthropic Messages and Responses all write content this way;
    images and other parts carry no text and are skipped.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return sep.join(part["text"] for part in content
                    if isinstance(part, dict) and isinstance(part.get("text"), str)
                    and (kinds is None or part.get("type") in kinds))
