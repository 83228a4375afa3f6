"""Turn a config file's text into a new document by editing only what changed.

Admin writes (PUT and DELETE of a route, examples added) produce a whole new
document; writing it out with a YAML dumper would drop every comment of the
operator's file. Instead the old text is composed (PyYAML knows where each node
starts and ends) and walked beside the new document: an unchanged value keeps
its text, a changed scalar is replaced where it stands, a key or list item that
was added or removed becomes a line added or removed, and only a value whose
shape changed (a list that became a mapping, a flow mapping that gained a key)
is written out anew. Comments outside the changed values stay where they are.

The result is parsed again and must equal the new document, types included;
otherwise `ConfigEditError` is raised and the caller writes nothing.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from semproxy.config.edit import ConfigEditError, quoted
from semproxy.config.loader import is_json as is_json_text
from semproxy.config.loader import parse_document
from semproxy.errors import ConfigError

Edit = tuple[int, int, str]  # replace text[start:end] with the string


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(value: Any, **style: Any) -> str:
    text: str = yaml.dump(value, Dumper=_NoAliases, sort_keys=False, allow_unicode=True,
                          width=1 << 20, **style)
    return text.removesuffix("\n").removesuffix("\n...").strip("\n")


def _scalar(value: Any, is_json: bool) -> str:
    """One scalar as it reads back, type included: plain YAML where that is so."""
    if is_json:
        return quoted(value)
    plain = _dump(value)
    if "\n" not in plain and _same(yaml.safe_load(plain), value):
        return plain
    return _dump(value, default_style='"')


def _render(value: Any, column: int, is_block: bool, is_json: bool) -> str:
    """A new value at `column`: block style where the old one was, else flow style."""
    if is_json:
        return quoted(value)
    if not isinstance(value, dict | list):
        return _scalar(value, is_json)
    if is_block and value:
        return _dump(value, default_flow_style=False).replace("\n", "\n" + " " * column)
    return _dump(value, default_flow_style=True)


def content_end(node: Node) -> int:
    """Where the node's own text ends: a block collection's end mark lies past the
    comments and blank lines that follow it, its last value's does not."""
    if not isinstance(node, MappingNode | SequenceNode) or node.flow_style or not node.value:
        return int(node.end_mark.index)
    last = node.value[-1]
    return content_end(last[1] if isinstance(node, MappingNode) else last)


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _line_end(text: str, index: int) -> int:
    """The index just past the newline of the line holding `index` (or the text's end)."""
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def _starts_line(text: str, node: Node) -> bool:
    return text[_line_start(text, node.start_mark.index):node.start_mark.index].strip() == ""


class _Rewriter:
    """Collects the edits that turn the composed text into the new document."""

    def __init__(self, text: str, is_json: bool) -> None:
        self.text = text
        self.is_json = is_json
        self.edits: list[Edit] = []

    def replace(self, node: Node, new: Any) -> None:
        is_block = isinstance(node, MappingNode | SequenceNode) and not node.flow_style
        start, column = node.start_mark.index, node.start_mark.column
        text = _render(new, column, is_block, self.is_json)
        if is_block and not (isinstance(new, dict | list) and new) \
                and _starts_line(self.text, node):
            # A block list may stand at its key's own column ("key:\n- a"), where a
            # flow value may not: the flow value goes deeper than the key.
            start, text = _line_start(self.text, start), " " * (column + 2) + text
        self.edits.append((start, content_end(node), text))

    def insert(self, after: int, lines: list[str]) -> None:
        """Whole lines, on the line after the one holding `after`."""
        at = _line_end(self.text, after)
        text = "".join(f"{line}\n" for line in lines)
        if at == len(self.text) and not self.text.endswith("\n"):
            text = "\n" + text.removesuffix("\n")
        self.edits.append((at, at, text))

    def remove_lines(self, first: Node, last: Node) -> None:
        """The lines from the one holding `first` to the end of `last`'s text."""
        start = _line_start(self.text, first.start_mark.index)
        self.edits.append((start, _line_end(self.text, content_end(last)), ""))

    def walk(self, node: Node, new: Any) -> None:
        if _same(_value(node), new):
            return
        if isinstance(node, MappingNode) and isinstance(new, dict) and new:
            self._mapping(node, new)
        elif isinstance(node, SequenceNode) and isinstance(new, list) and new and node.value:
            self._sequence(node, new)
        else:
            self.replace(node, new)

    def _mapping(self, node: MappingNode, new: dict[str, Any]) -> None:
        pairs = {k.value: (k, v) for k, v in node.value if isinstance(k, ScalarNode)}
        removed = [pairs[k] for k in pairs if k not in new]
        if len(pairs) != len(node.value) or (node.flow_style and set(pairs) != set(new)) \
                or not all(_starts_line(self.text, key) for key, _ in removed):
            self.replace(node, new)
            return
        for key, value in removed:
            self.remove_lines(key, value)
        for name, value in new.items():
            if name in pairs:
                self.walk(pairs[name][1], value)
        added = {k: v for k, v in new.items() if k not in pairs}
        if added:
            column = node.value[0][0].start_mark.column
            self.insert(content_end(node), [self._key_line(k, v, column)
                                            for k, v in added.items()])

    def _key_line(self, name: str, value: Any, column: int) -> str:
        key = f"{' ' * column}{_scalar(name, self.is_json)}:"
        if isinstance(value, dict | list) and value:
            return f"{key}\n{' ' * (column + 2)}{_render(value, column + 2, True, False)}"
        return f"{key} {_render(value, 0, False, False)}"

    def _dash_prefix(self, node: SequenceNode) -> str | None:
        """The indentation and dash before each item of a block list whose items
        start their own lines (None otherwise)."""
        if not node.value:
            return None
        first = node.value[0]
        prefix = self.text[_line_start(self.text, first.start_mark.index):first.start_mark.index]
        return prefix if prefix.strip() == "-" else None

    def _sequence(self, node: SequenceNode, new: list[Any]) -> None:
        items = node.value
        olds = [_value(i) for i in items]
        prefix = None if node.flow_style else self._dash_prefix(node)
        if len(new) == len(items):
            for item, value in zip(items, new, strict=True):
                self.walk(item, value)
        elif len(new) > len(items) and _same(olds, new[:len(items)]):
            self._append(node, new[len(items):], prefix)
        elif prefix is not None and len(new) == len(items) - 1 \
                and (gone := _removed_index(olds, new)) is not None:
            self.remove_lines(items[gone], items[gone])
        else:
            self.replace(node, new)

    def _append(self, node: SequenceNode, added: list[Any], prefix: str | None) -> None:
        """New items after the last: a line each in a block list, `, item` in a flow one."""
        if node.flow_style:
            end = node.value[-1].end_mark.index
            listed = "".join(f", {_render(v, 0, False, self.is_json)}" for v in added)
            self.edits.append((end, end, listed))
        elif prefix is None:
            self.replace(node, [*_value(node), *added])
        else:
            column = node.value[0].start_mark.column
            self.insert(content_end(node), [f"{prefix}{_render(v, column, True, False)}"
                                            for v in added])


def _value(node: Node) -> Any:
    """What a composed node stands for, as `yaml.safe_load` would give it."""
    return yaml.SafeLoader("").construct_document(node)


def _removed_index(olds: list[Any], new: list[Any]) -> int | None:
    """The one index whose removal from `olds` gives `new`, if there is one."""
    for i in range(len(olds)):
        if _same(olds[:i] + olds[i + 1:], new):
            return i
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types throughout (True is not 1 in a config)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def rewrite(text: str, new: dict[str, Any], source: str = "<config>") -> str:
    """`text` edited so that it holds `new`, comments kept outside the changed values."""
    is_json = is_json_text(text, source)
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise ConfigEditError("the file cannot be edited in place: it does not parse as "
                              "YAML") from exc
    if not isinstance(root, MappingNode) or _has_aliases(root):
        raise ConfigEditError("the file cannot be edited in place: its top level is not a "
                              "mapping, or it uses YAML anchors")
    rewriter = _Rewriter(text, is_json)
    rewriter.walk(root, new)
    out = _apply(text, rewriter.edits)
    try:
        got = parse_document(out, source)
    except ConfigError as exc:
        raise ConfigEditError("the edited file does not parse; nothing written") from exc
    if not _same(got, new):
        raise ConfigEditError("the edited file does not read back as the new config; "
                              "nothing written")
    return out


def _apply(text: str, edits: list[Edit]) -> str:
    """Make the edits from the end of the text backwards. At one place a removal goes
    first, then the insertions, so those recorded first end up first."""
    order = sorted(range(len(edits)), reverse=True,
                   key=lambda i: (edits[i][0], edits[i][1] > edits[i][0], i))
    for i in order:
        start, end, value = edits[i]
        text = text[:start] + value + text[end:]
    return text


def _has_aliases(root: Node) -> bool:
    """Whether a node appears twice (an anchor and its aliases): editing one place
    would change the other."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            return True
        seen.add(id(node))
        if isinstance(node, MappingNode):
            stack += [n for pair in node.value for n in pair]
        elif isinstance(node, SequenceNode):
            stack += node.value
    return False
