"""Rewrite thresholds and add examples in a config file in place, keeping comments and layout.

A YAML round trip through a parser would drop every comment, and a new
dependency (ruamel) only for this is not worth it. PyYAML's composer already
knows where every node starts and ends in the text, so we replace the value
of an existing `threshold` key in place, or insert a `threshold` key next to
the mapping's first key (block style) or before its closing brace (flow
style, and JSON). The result is parsed again and must equal the original
document with exactly those thresholds changed; otherwise nothing is written.
New examples are appended the same way: a line per example after the last
item of a block list, before the `]` of a flow list, or a new `examples` key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

Edit = tuple[int, int, str]  # replace text[start:end] with the string
# Characters a YAML reader refuses (C1 controls, DEL, non-characters) or folds
# into a space inside quotes (NEL, line and paragraph separators).
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


class ConfigEditError(ValueError):
    """The file has a shape the line-level edit does not handle."""


def _get(node: Node, key: str) -> Node | None:
    if isinstance(node, MappingNode):
        for k, v in node.value:
            if isinstance(k, ScalarNode) and k.value == key:
                return v  # type: ignore[no-any-return]
    return None


def _find_route(root: Node, route_id: str) -> Node:
    routes = _get(root, "routes")
    if isinstance(routes, SequenceNode):
        for route in routes.value:
            rid = _get(route, "id")
            if isinstance(rid, ScalarNode) and rid.value == route_id:
                return route  # type: ignore[no-any-return]
    raise ConfigEditError(f"no route with id {route_id!r}")


def _set_key(text: str, node: Node, key: str, value: str, is_json: bool) -> Edit:
    existing = _get(node, key)
    if existing is not None:
        return (existing.start_mark.index, existing.end_mark.index, value)
    if not isinstance(node, MappingNode) or not node.value:
        raise ConfigEditError(f"cannot add {key!r} to an empty or non-mapping node")
    name = f'"{key}"' if is_json else key
    if node.flow_style:
        close = text.rindex("}", node.start_mark.index, node.end_mark.index)
        return (close, close, f", {name}: {value}")
    first_key, first_value = node.value[0]
    line_start = text.rfind("\n", 0, first_key.start_mark.index) + 1
    column = first_key.start_mark.column
    if text[line_start:first_key.start_mark.index].strip() == "":
        return (line_start, line_start, f"{' ' * column}{name}: {value}\n")
    # The first key shares its line with a list dash ("- name: x"): add the
    # new key on the line after that key's value, when the value fits on it.
    if first_value.end_mark.line != first_key.start_mark.line:
        raise ConfigEditError(f"cannot place {key!r} after a multi-line first value")
    end = text.find("\n", first_value.end_mark.index)
    end = len(text) if end < 0 else end
    return (end, end, f"\n{' ' * column}{name}: {value}")


def _format(value: float) -> str:
    return f"{value:.4f}"


def _route_plugin(text: str, route_id: str) -> tuple[bool, Node]:
    """Whether the text is JSON, and the node of the route's ai-proxy-multi plugin."""
    root = yaml.compose(text)
    if root is None:
        raise ConfigEditError("the config is empty")
    plugins = _get(_find_route(root, route_id), "plugins")
    multi = None if plugins is None else _get(plugins, "ai-proxy-multi")
    if multi is None:
        raise ConfigEditError(f"route {route_id!r} has no ai-proxy-multi instances")
    return text.lstrip().startswith("{"), multi


def _apply(text: str, edits: list[Edit]) -> str:
    """The text with every (start, end, replacement) edit made, last one first."""
    for start, end, value in sorted(edits, reverse=True):
        text = text[:start] + value + text[end:]
    return text


def set_thresholds(text: str, route_id: str, threshold: float,
                   per_instance: Mapping[str, float]) -> str:
    """The config text with the route's threshold and these instances' thresholds set."""
    is_json, multi = _route_plugin(text, route_id)
    holder = _get(multi, "semantic_opts") or _get(multi, "balancer")
    if holder is None:
        raise ConfigEditError(f"route {route_id!r} has no balancer block")
    edits = [_set_key(text, holder, "threshold", _format(threshold), is_json)]
    instances = _get(multi, "instances")
    for inst in instances.value if isinstance(instances, SequenceNode) else ():
        name = _get(inst, "name")
        if isinstance(name, ScalarNode) and name.value in per_instance:
            edits.append(_set_key(text, inst, "threshold",
                                  _format(per_instance[name.value]), is_json))
    out = _apply(text, edits)
    _verify(text, out, route_id, threshold, per_instance)
    return out


def _verify(before: str, after: str, route_id: str, threshold: float,
            per_instance: Mapping[str, float]) -> None:
    expected: Any = yaml.safe_load(before)
    multi = next(r for r in expected["routes"] if r.get("id") == route_id)[
        "plugins"]["ai-proxy-multi"]
    holder = multi.get("semantic_opts") or multi["balancer"]
    holder["threshold"] = round(threshold, 4)
    for inst in multi["instances"]:
        if inst.get("name") in per_instance:
            inst["threshold"] = round(per_instance[inst["name"]], 4)
    try:
        got = yaml.safe_load(after)
    except yaml.YAMLError as exc:
        raise ConfigEditError(f"the edited config does not parse: {exc}") from exc
    if got != expected:
        raise ConfigEditError("the edit changed more than the thresholds; nothing written")


def quoted(value: Any) -> str:
    """`value` as JSON that reads back as the same value in YAML too: the characters
    YAML would refuse or fold are written as \\u escapes, which both read."""
    text = json.dumps(value, ensure_ascii=False)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _scalar(text: str, block: bool) -> str:
    """One example as YAML: plain when that reads back as the same string, else quoted.

    A double-quoted JSON string is also a valid YAML scalar, in block and flow
    context and in a JSON file.
    """
    if block:
        plain = yaml.safe_dump(text, width=1 << 20, allow_unicode=True)
        plain = plain.removesuffix("\n").removesuffix("\n...").strip()
        if "\n" not in plain and yaml.safe_load(plain) == text and not _UNSAFE.search(plain):
            return plain
    return quoted(text)


def _append_items(text: str, node: SequenceNode, new: Sequence[str], is_json: bool) -> Edit:
    items = node.value
    listed = ", ".join(_scalar(t, False) for t in new)
    if not items:
        close = text.rindex("]", node.start_mark.index, node.end_mark.index)
        return (close, close, listed)
    if node.flow_style or is_json:
        end = items[-1].end_mark.index
        return (end, end, ", " + listed)
    first, last = items[0], items[-1]
    line_start = text.rfind("\n", 0, first.start_mark.index) + 1
    prefix = text[line_start:first.start_mark.index]  # indentation and "- "
    if prefix.strip() != "-":
        raise ConfigEditError("cannot append to a list whose first item shares a line")
    end = last.end_mark.index
    if end and text[end - 1] != "\n":
        end = text.find("\n", end)
        end = len(text) if end < 0 else end + 1
    lines = "".join(f"{prefix}{_scalar(t, True)}\n" for t in new)
    if end == len(text) and not text.endswith("\n"):
        lines = "\n" + lines.removesuffix("\n")
    return (end, end, lines)


def add_examples(text: str, route_id: str, new: Mapping[str, Sequence[str]]) -> str:
    """The config text with `new[name]` appended to each named instance's examples."""
    is_json, multi = _route_plugin(text, route_id)
    instances = _get(multi, "instances")
    if not isinstance(instances, SequenceNode):
        raise ConfigEditError(f"route {route_id!r} has no ai-proxy-multi instances")
    edits: list[Edit] = []
    found = set()
    for inst in instances.value:
        name = _get(inst, "name")
        if not (isinstance(name, ScalarNode) and new.get(name.value)):
            continue
        found.add(name.value)
        examples = _get(inst, "examples")
        if isinstance(examples, SequenceNode):
            edits.append(_append_items(text, examples, new[name.value], is_json))
        else:
            flow = "[" + ", ".join(_scalar(t, False) for t in new[name.value]) + "]"
            edits.append(_set_key(text, inst, "examples", flow, is_json))
    missing = sorted(n for n, texts in new.items() if texts and n not in found)
    if missing:
        raise ConfigEditError(f"route {route_id!r} has no instance {', '.join(missing)}")
    out = _apply(text, edits)
    _verify_examples(text, out, route_id, new)
    return out


def _verify_examples(before: str, after: str, route_id: str,
                     new: Mapping[str, Sequence[str]]) -> None:
    expected: Any = yaml.safe_load(before)
    multi = next(r for r in expected["routes"] if r.get("id") == route_id)[
        "plugins"]["ai-proxy-multi"]
    for inst in multi["instances"]:
        if new.get(inst.get("name")):
            inst["examples"] = [*(inst.get("examples") or []), *new[inst["name"]]]
    try:
        got = yaml.safe_load(after)
    except yaml.YAMLError as exc:
        raise ConfigEditError(f"the edited config does not parse: {exc}") from exc
    if got != expected:
        raise ConfigEditError("the edit changed more than the examples; nothing written")
