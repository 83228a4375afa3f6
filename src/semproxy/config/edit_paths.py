"""A change at one path of a config document: what the admin API's limit, group and
pricing writes make (admin/limits.py).

Each is applied to the document as stored when the write runs (admin/writes.py),
and the file is then written by config/rewrite.py, which keeps its comments and
layout outside the changed value.

A path is a tuple of steps: a mapping key, or `(field, value)` for the item of
a list whose `field` is `value` (`("consumers", ("username", "alice"),
"plugins", "ai-rate-limiting")`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from semproxy.config.edit import ConfigEditError

Step = str | tuple[str, str]


@dataclass(frozen=True, slots=True)
class PathEdit:
    """One change: `set` a value (replacing or adding the key), `remove` a key or a
    list item, or `append` an item to a list (created when missing)."""

    kind: str
    path: tuple[Step, ...]
    value: Any = None


def apply(document: Any, edit: PathEdit) -> Any:
    """The document (a copy) with the change made; ConfigEditError when its path is not
    there (or goes through a value that is not a mapping or list)."""
    doc = copy.deepcopy(document) if document is not None else {}
    *parents, last = edit.path
    node: Any = doc
    for step in parents:
        node = _child(node, step, create=edit.kind != "remove")
    if edit.kind == "set" and isinstance(last, tuple):
        node[node.index(_child(node, last, create=False))] = edit.value
    elif edit.kind == "set":
        node[last] = edit.value
    elif edit.kind == "append":
        node.setdefault(last, []).append(edit.value)
    elif isinstance(last, tuple):
        node.remove(_child(node, last, create=False))
    else:
        del node[last]
    return doc


def _child(node: Any, step: Step, create: bool) -> Any:
    if isinstance(step, tuple):
        field, value = step
        for item in node:
            if isinstance(item, dict) and item.get(field) == value:
                return item
        raise ConfigEditError(f"no item with {field} {value!r}")
    if step not in node or node[step] is None:
        if not create:
            raise ConfigEditError(f"no key {step!r}")
        node[step] = {}
    return node[step]
