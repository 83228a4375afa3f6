"""What semantic routing reads from a request: the text it embeds.

The rule is the proposal's: the last message with role `user` (and, with
`context: conversation`, the user turns before it). A content
array contributes its text parts joined with a space; images and other parts
carry no text to compare, so they are skipped. The text is capped before it
is embedded, so a pasted document cannot make routing expensive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The router embeds at most this many bytes of the prompt (UTF-8): enough to
# capture intent, small enough that a pasted document cannot make routing
# expensive. Bytes, not characters: tokenizing costs per byte-level token, and
# 16,384 emoji (64 KiB) took 5.4x as long as 16,384 characters of English
# (CJK 2.8x); cut to 16 KiB each costs at most 1.4x (docs/en/semantic-routing.md).
MAX_ROUTING_TEXT = 16 * 1024


@dataclass(frozen=True, slots=True)
class RoutingInput:
    """What a decision is made on.

    `text` is the last user turn (capped, stripped; empty when there is none).
    `earlier` holds the user turns before it, oldest first, only on routes with
    `context: conversation` (and only those worth reading, see `earlier_turns`).
    """

    text: str
    earlier: tuple[str, ...] = ()


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one chat message: a string content, or the text parts of an array."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part["text"] for part in content
                        if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def capped(text: str) -> str:
    """`text` cut to its first MAX_ROUTING_TEXT bytes of UTF-8, at a character boundary."""
    if len(text) <= MAX_ROUTING_TEXT // 4:  # at most 4 bytes a character: under the cap
        return text
    head = text[:MAX_ROUTING_TEXT]
    data = head.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_ROUTING_TEXT:
        return head
    # "ignore" drops the character the cut went through (and lone surrogates).
    return data[:MAX_ROUTING_TEXT].decode("utf-8", "ignore")


def routing_text(payload: Mapping[str, Any]) -> str:
    """The text semantic routing looks at: the last user message, capped and stripped."""
    for message in reversed(payload["messages"]):
        if message.get("role") == "user":
            return capped(message_text(message)).strip()
    return ""


def routing_input(payload: Mapping[str, Any]) -> RoutingInput:
    """The routing input of a chat request whose `messages` were checked already."""
    return RoutingInput(routing_text(payload))


def prompt_input(prompt: str) -> RoutingInput:
    """The input a request carrying `prompt` as its only user message would get."""
    return RoutingInput(capped(prompt).strip())


def earlier_turns(messages: Sequence[Any], max_turns: int, max_chars: int) -> tuple[str, ...]:
    """Up to `max_turns - 1` user turns before the last one, oldest first.

    Only the user's own words count: tool results (role `tool`, or a user turn
    with no text part) and turns longer than `max_chars` (pasted logs, files)
    are skipped, so they neither carry a topic nor use up a turn.
    """
    found: list[str] = []
    seen_last = False
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        if not seen_last:
            seen_last = True  # the last user turn is `RoutingInput.text`
            continue
        text = message_text(message).strip()
        if text and len(text) <= max_chars:
            found.append(text)
            if len(found) >= max_turns - 1:
                break
    return tuple(reversed(found))
