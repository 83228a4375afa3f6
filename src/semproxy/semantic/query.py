"""What semantic routing reads from a request: the text it embeds.

The rule is the proposal's: the last message with role `user`. A content
array contributes its text parts joined with a space; images and other parts
carry no text to compare, so they are skipped. The text is capped before it
is embedded, so a pasted document cannot make routing expensive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The router embeds at most this much of the prompt: enough to capture intent,
# small enough that a pasted document cannot make routing expensive.
MAX_ROUTING_TEXT = 16 * 1024


@dataclass(frozen=True, slots=True)
class RoutingInput:
    """The text a decision is made on (capped, stripped; empty when there is none)."""

    text: str


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one chat message: a string content, or the text parts of an array."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part["text"] for part in content
                        if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def routing_text(payload: Mapping[str, Any]) -> str:
    """The text semantic routing looks at: the last user message, capped and stripped."""
    for message in reversed(payload["messages"]):
        if message.get("role") == "user":
            return message_text(message)[:MAX_ROUTING_TEXT].strip()
    return ""


def routing_input(payload: Mapping[str, Any]) -> RoutingInput:
    """The routing input of a chat request whose `messages` were checked already."""
    return RoutingInput(routing_text(payload))


def prompt_input(prompt: str) -> RoutingInput:
    """The input a request carrying `prompt` as its only user message would get."""
    return RoutingInput(prompt[:MAX_ROUTING_TEXT].strip())
