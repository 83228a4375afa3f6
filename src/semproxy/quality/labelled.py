"""Labelled prompts: one JSON object per line, naming the instance that should serve it.

    {"prompt": "fix this stack trace", "instance": "code"}
    {"messages": [{"role": "user", "content": "..."}], "instance": null}

`"instance": null` means the prompt should reach the catchall. A `messages`
line is reduced to text exactly as the gateway does it (`routing_text`); its
earlier user turns are kept for routes with `context: conversation`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from semproxy.semantic.query import MAX_ROUTING_TEXT, RoutingInput, earlier_turns, routing_text


class LabelledDataError(ValueError):
    """A labelled file that cannot be used; the message names the line."""


@dataclass(frozen=True, slots=True)
class LabelledPrompt:
    text: str
    instance: str | None  # None: the catchall should serve it
    earlier: tuple[str, ...] = ()  # user turns before `text`, oldest first (`messages` lines)

    def routing_input(self) -> RoutingInput:
        """All the user turns; the route's router keeps what its settings read."""
        return RoutingInput(self.text, self.earlier)


def parse_item(item: Any, where: str) -> LabelledPrompt:
    if not isinstance(item, dict):
        raise LabelledDataError(f"{where}: expected a JSON object")
    if "instance" not in item:
        raise LabelledDataError(f"{where}: 'instance' is required (null for the catchall)")
    label = item["instance"]
    if label is not None and not isinstance(label, str):
        raise LabelledDataError(f"{where}: 'instance' must be a string or null")
    if isinstance(item.get("prompt"), str):
        return LabelledPrompt(item["prompt"].strip(), label)
    messages = item.get("messages")
    if isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages):
        # Every earlier user turn: the route's conversation settings choose among them.
        earlier = earlier_turns(messages, len(messages) + 1, MAX_ROUTING_TEXT)
        return LabelledPrompt(routing_text({"messages": messages}), label, earlier)
    raise LabelledDataError(f"{where}: give 'prompt' (a string) or 'messages' (a chat array)")


def parse_lines(lines: Iterable[str], source: str = "<data>") -> list[LabelledPrompt]:
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise LabelledDataError(f"{source}:{number}: not valid JSON: {exc.msg}") from exc
        out.append(parse_item(item, f"{source}:{number}"))
    if not out:
        raise LabelledDataError(f"{source}: no labelled prompts")
    return out


def load_jsonl(path: str | Path) -> list[LabelledPrompt]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise LabelledDataError(f"{p}: cannot read: {exc.strerror}") from exc
    return parse_lines(text.splitlines(), str(p))


def check_labels(items: Iterable[LabelledPrompt], known: Iterable[str], source: str) -> None:
    """Every named instance must exist on the route; a typo would silently count as wrong."""
    names = set(known)
    unknown = sorted({i.instance for i in items if i.instance is not None} - names)
    if unknown:
        raise LabelledDataError(f"{source}: instances not on the route: {', '.join(unknown)}")
