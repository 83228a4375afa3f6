"""Small shared types: the shape of parsed JSON documents."""

from __future__ import annotations

from typing import Any

JSONObject = dict[str, Any]


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
