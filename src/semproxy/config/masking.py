"""Credentials hidden wherever the config is shown: admin API, downloads, public version.

A value is masked by where it sits, never by what it looks like, so no format
of key slips through: auth header and query values, the admin key, consumer
keys, active health-check request headers, and the query values and userinfo
of every endpoint and proxy URL. A value that is nothing but a reference to the
environment (`${KEY}`, `Bearer ${KEY}`, `$env://KEY`) names no secret and is
shown as written, so a document view keeps telling where a key comes from.

An edited document sent back with `******` in place of a credential keeps the
stored one (`restore_masked`): a client can round-trip what it was shown.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

import yaml

from semproxy.config.secrets import is_credential, twin_index

MASK = "******"
# A reference, and what may stand around it without holding a secret itself.
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}|\$env://[A-Za-z0-9_/.-]+")
_SCHEME_WORD = re.compile(r"^\s*(?:[A-Za-z-]+\s+)?$")


def mask_value(value: Any) -> Any:
    is_reference = isinstance(value, str) and _REFERENCE.search(value) is not None
    if is_reference and _SCHEME_WORD.match(_REFERENCE.sub("", value)):
        return value
    return MASK


def mask_url(url: str) -> str:
    """`url` with its userinfo and every query value blanked (the path is kept)."""
    if "@" not in url and "?" not in url:
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = MASK + "@" + netloc.rpartition("@")[2]
        pairs = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return MASK
    query = "&".join(f"{quote(name, safe='')}={MASK}" for name, _ in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_header_line(line: Any) -> Any:
    """`Name: value` as `Name: ******` (APISIX `checks.active.req_headers` items)."""
    if not isinstance(line, str) or ":" not in line:
        return mask_value(line)
    name, _, value = line.partition(":")
    shown = mask_value(value.strip())
    return f"{name}: {shown}"


def mask_secrets(node: Any, keys: tuple[str, ...] = ()) -> Any:
    """A copy of a config document (or of one route) with every credential masked."""
    if isinstance(node, dict):
        return {k: mask_secrets(v, (*keys, str(k))) for k, v in node.items()}
    if isinstance(node, list):
        return [mask_secrets(v, keys) for v in node]
    return shown(node, keys)


def shown(value: Any, keys: tuple[str, ...]) -> Any:
    """How one value at this chain of mapping keys is shown."""
    if is_credential(keys):
        return mask_header_line(value) if keys[-1] == "req_headers" else mask_value(value)
    if isinstance(value, str) and keys[-1:] in (("endpoint",), ("http_path",), ("proxy",)):
        return mask_url(value)
    return value


def mask_text(text: str) -> str:
    """A YAML or JSON config text with every credential masked in place.

    Comments and layout are kept (the file is offered for download as written);
    only the credential scalars are replaced, each by a double-quoted string,
    which reads the same in YAML and JSON.
    """
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    edits: list[tuple[int, int, str]] = []
    if root is not None:
        _collect(root, (), edits, set())
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _collect(node: yaml.Node, keys: tuple[str, ...], edits: list[tuple[int, int, str]],
             seen: set[int]) -> None:
    if id(node) in seen:  # an alias: its anchor's text is edited once
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _collect(value, (*keys, str(key.value)), edits, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _collect(item, keys, edits, seen)
    elif isinstance(node, yaml.ScalarNode):
        new = shown(node.value, keys)
        if new != node.value:
            edits.append((node.start_mark.index, node.end_mark.index, json.dumps(new)))


def with_references(effective: Any, written: Any) -> Any:
    """`effective` (a loaded config, defaults filled in) with every value that the
    document as `written` took from the environment shown as written (`${VAR}`),
    so what an admin reads never holds a value of the gateway's environment."""
    if isinstance(written, str):
        return written if _REFERENCE.search(written) else effective
    if isinstance(effective, dict) and isinstance(written, dict):
        return {k: with_references(v, written[k]) if k in written else v
                for k, v in effective.items()}
    if isinstance(effective, list) and isinstance(written, list):
        return [with_references(v, written[i]) if i < len(written) else v
                for i, v in enumerate(effective)]
    return effective


def restore_masked(new: Any, old: Any) -> Any:
    """`new` with each masked value that matches what `old` shows there replaced by
    the stored value of `old`."""
    return _restore(new, old, mask_secrets(old))


def _restore(new: Any, old: Any, shown: Any) -> Any:
    if isinstance(new, str):
        is_masked_twin = MASK in new and new == shown and isinstance(old, str)
        return old if is_masked_twin else new
    if isinstance(new, dict) and isinstance(old, dict) and isinstance(shown, dict):
        return {k: _restore(v, old[k], shown[k]) if k in old else v for k, v in new.items()}
    if isinstance(new, list) and isinstance(old, list) and isinstance(shown, list):
        return [_restore(v, *_twin(v, i, old, shown)) for i, v in enumerate(new)]
    return new


def _twin(item: Any, index: int, old: list[Any], shown: list[Any]) -> tuple[Any, Any]:
    """The stored item `item` stands for, and how it is shown (None, None: no twin)."""
    j = twin_index(item, index, old)
    return (None, None) if j is None else (old[j], shown[j])


def masked_paths(node: Any, path: str = "") -> list[str]:
    """Where a `******` is left: a credential the sender did not have to give back."""
    if isinstance(node, str):
        return [path or "<root>"] if MASK in node else []
    if isinstance(node, dict):
        return [p for k, v in node.items()
                for p in masked_paths(v, f"{path}.{k}" if path else str(k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in masked_paths(v, f"{path}[{i}]")]
    return []
