"""Edit a config file's text at a path, keeping its comments and layout.

The admin API's limit and budget writes (admin/limits.py) change one value of
the document: a consumer's `ai-rate-limiting`, a group, an instance's
`pricing`. A YAML dump of the whole document would drop every comment, so, as
`edit.py` does for thresholds and examples, the value's node is found in the
text by PyYAML's composer and only its span is rewritten: replaced, inserted
after the mapping's last entry, appended to a list, or removed with its lines.
The result is parsed again and must equal the document with exactly that
change (`apply`); otherwise `ConfigEditError` and nothing is written, and the
caller writes the whole document instead.

A path is a tuple of steps: a mapping key, or `(field, value)` for the item of
a list whose `field` is `value` (`("consumers", ("username", "alice"),
"plugins", "ai-rate-limiting")`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

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
    """The document (a copy) with the change made: what the edited text must read as."""
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


def edit_text(text: str, edit: PathEdit) -> str:
    """The text with the change made in place (verified; see the module docstring)."""
    root = yaml.compose(text)
    if not isinstance(root, MappingNode):
        raise ConfigEditError("the config is not a mapping")
    is_json = text.lstrip().startswith("{")
    out = _edit(text, root, edit, is_json)
    try:
        got = yaml.safe_load(out)
    except yaml.YAMLError as exc:
        raise ConfigEditError(f"the edited config does not parse: {exc}") from exc
    if got != apply(yaml.safe_load(text), edit):
        raise ConfigEditError("the edit changed more than its value; nothing written")
    return out


def _edit(text: str, root: MappingNode, edit: PathEdit, is_json: bool) -> str:
    node: Node = root
    steps = list(edit.path)
    while len(steps) > 1:
        found = _find(node, steps[0])
        if found is None:
            break
        node, steps = found, steps[1:]
    if len(steps) > 1 or (edit.kind == "append" and _find(node, steps[0]) is None):
        # What is missing is added whole under the last node that exists.
        if edit.kind == "remove" or any(isinstance(s, tuple) for s in steps):
            raise ConfigEditError("the path does not exist in the file")
        value: Any = [edit.value] if edit.kind == "append" else edit.value
        for step in reversed(steps[1:]):
            value = {step: value}
        return _splice(text, _insert(text, node, steps[0], value, is_json))
    last = steps[0]
    target = _find(node, last)
    if edit.kind == "append":
        if not isinstance(target, SequenceNode):
            raise ConfigEditError("not a list")
        return _splice(text, _append(text, target, edit.value, is_json))
    if edit.kind == "remove":
        if target is None:
            raise ConfigEditError("the path does not exist in the file")
        return _splice(text, _remove(text, node, target))
    if target is None:
        return _splice(text, _insert(text, node, last, edit.value, is_json))
    return _splice(text, _replace(text, target, edit.value, is_json))


def _find(node: Node, step: Step) -> Node | None:
    if isinstance(step, str):
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if isinstance(key, ScalarNode) and key.value == step:
                    return value  # type: ignore[no-any-return]
        return None
    if isinstance(node, SequenceNode):
        field, wanted = step
        for item in node.value:
            found = _find(item, field)
            if isinstance(found, ScalarNode) and found.value == wanted:
                return item  # type: ignore[no-any-return]
    return None


Splice = tuple[int, int, str]


def _splice(text: str, edit: Splice) -> str:
    start, end, new = edit
    return text[:start] + new + text[end:]


def _content_end(node: Node) -> int:
    """Where a node's own text ends: its last scalar or closing bracket, never the
    comments and blank lines PyYAML counts into a block collection's end."""
    if isinstance(node, (MappingNode, SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(last[1] if isinstance(last, tuple) else last)
    return int(node.end_mark.index)


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


def _flow(value: Any, is_json: bool) -> str:
    if is_json:
        return orjson.dumps(value).decode()
    dumped = yaml.safe_dump(value, default_flow_style=True, sort_keys=False,
                            allow_unicode=True, width=1 << 20)
    return str(dumped).strip().removesuffix("...").strip()


class _IndentedDumper(yaml.SafeDumper):
    """Lists indented under their key (`limits:` then `  - ...`), as configs are written."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _block(value: Any, column: int) -> str:
    """`value` as block YAML, every line indented to `column`, no final newline."""
    dumped = yaml.dump(value, Dumper=_IndentedDumper, default_flow_style=None,
                       sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(" " * column + line for line in dumped.rstrip("\n").splitlines())


def _is_block(node: Node) -> bool:
    return isinstance(node, (MappingNode, SequenceNode)) and not node.flow_style


def _replace(text: str, target: Node, value: Any, is_json: bool) -> Splice:
    end = _content_end(target)
    start = target.start_mark.index
    if _is_block(target) and isinstance(value, (dict, list)) and value and not is_json:
        if text[_line_start(text, start):start].strip() not in ("", "-"):
            raise ConfigEditError("a block value that shares its first line")
        column = target.start_mark.column
        return start, end, _block(value, column)[column:]  # the first line starts here
    return start, end, _flow(value, is_json)


def _insert(text: str, mapping: Node, key: Step, value: Any, is_json: bool) -> Splice:
    """`key: value` added after the mapping's last entry."""
    if not isinstance(mapping, MappingNode) or not isinstance(key, str):
        raise ConfigEditError("the path does not lead to a mapping")
    if mapping.flow_style or is_json:
        close = text.rindex("}", mapping.start_mark.index, mapping.end_mark.index)
        name = orjson.dumps(key).decode() if is_json else key
        sep = ", " if mapping.value else ""
        return close, close, f"{sep}{name}: {_flow(value, is_json)}"
    if not mapping.value:
        raise ConfigEditError(f"cannot add {key!r} to an empty mapping")
    column = mapping.value[0][0].start_mark.column
    end = _content_end(mapping)
    if isinstance(value, (dict, list)) and value:
        entry = f"{key}:\n{_block(value, column + 2)}"
    else:
        entry = f"{key}: {_flow(value, False)}"
    at = _line_end(text, end)
    return at, at, "\n" + " " * column + entry


def _append(text: str, seq: SequenceNode, item: Any, is_json: bool) -> Splice:
    if seq.flow_style or is_json or not seq.value:
        close = text.rindex("]", seq.start_mark.index, seq.end_mark.index)
        sep = ", " if seq.value else ""
        return close, close, sep + _flow(item, is_json)
    first = seq.value[0]
    prefix = text[_line_start(text, first.start_mark.index):first.start_mark.index]
    if prefix.strip() != "-":
        raise ConfigEditError("a list whose first item shares a line")
    body = _block(item, len(prefix))
    at = _line_end(text, _content_end(seq))
    return at, at, "\n" + prefix + body[len(prefix):]


def _remove(text: str, parent: Node, target: Node) -> Splice:
    """The lines of a key and its value, or of a list item; refused where that would
    leave an empty block or split a line with other content."""
    if not _is_block(parent) or len(parent.value) < 2:
        raise ConfigEditError("cannot remove the only entry or from a flow collection")
    if isinstance(parent, MappingNode):
        key = next(k for k, v in parent.value if v is target)
        first = key.start_mark.index
    else:
        first = target.start_mark.index
    start = _line_start(text, first)
    lead = text[start:first].strip()
    if lead not in ("", "-") or (lead == "-" and isinstance(parent, MappingNode)):
        raise ConfigEditError("an entry that shares its line")
    end = _line_end(text, _content_end(target))
    return start, min(end + 1, len(text)), ""
