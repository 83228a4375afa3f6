"""Read a config document, fill in ${VAR} and $env://, validate, build the frozen runtime.

Every problem is reported as "field.path: message" so the operator can find it;
all problems are collected, not only the first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from semproxy.config.masking import mask_secrets
from semproxy.config.schema import Root
from semproxy.config.secrets import expand
from semproxy.config.spec import GatewayConfig, build
from semproxy.errors import ConfigError
from semproxy.observability.logging import redact
from semproxy.types import is_deeper_than

# A real config holds a few thousand values. YAML aliases can make a short file
# stand for billions (441 bytes -> 48 s and 1.4 GB in `validate`), so the size a
# document would have once its aliases are expanded is counted before it is built.
MAX_EXPANDED_VALUES = 100_000
# A real config nests about ten levels; the limit keeps the recursive steps below
# (${VAR} substitution, validation) far from Python's recursion limit.
MAX_DEPTH = 64
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9._~-]{1,100}$")


def parse_document(text: str, source: str = "<config>") -> Any:
    """YAML is a superset of JSON, but JSON goes through orjson for exact errors.

    Error messages give the position, never the text around it: the line of a
    config can hold a key, and these messages reach logs and the admin API.
    """
    try:
        if is_json(text, source):
            return orjson.loads(text)
        return load_yaml(text)
    except orjson.JSONDecodeError as exc:
        raise ConfigError([f"{source}: not valid JSON: {exc.msg} at line {exc.lineno}, "
                           f"column {exc.colno}"]) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: not valid YAML: {yaml_problem(exc)}"]) from exc
    except RecursionError as exc:  # PyYAML recurses once per nesting level
        raise ConfigError([f"{source}: nests too deeply to parse"]) from exc


def is_json(text: str, source: str) -> bool:
    """Whether a config text is read as JSON (by its name, or its first character)."""
    return source.endswith(".json") or text.lstrip().startswith("{")


def yaml_problem(exc: yaml.YAMLError) -> str:
    """What PyYAML found wrong and where, without the snippet of text it quotes."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return type(exc).__name__
    mark = exc.problem_mark or exc.context_mark
    where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
    return f"{exc.problem or exc.context or 'syntax error'}{where}"


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, refusing a document whose expanded size passes the limit."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = expanded_size(node, {})
        if size > MAX_EXPANDED_VALUES:
            raise ConfigError([f"<root>: YAML aliases expand to more than "
                               f"{MAX_EXPANDED_VALUES:,} values; write the values out"])
        return loader.construct_document(node)
    finally:
        loader.dispose()


def expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many values `node` stands for with every alias copied out.

    An alias is the same node object as its anchor, so each node is counted
    once (memo) and its count reused: linear in the file, whatever it expands to.
    """
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = 1  # a node that contains itself counts once
    total = 1
    if isinstance(node, yaml.SequenceNode):
        total += sum(expanded_size(child, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        total += sum(expanded_size(k, memo) + expanded_size(v, memo) for k, v in node.value)
    memo[id(node)] = total
    return total


def format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def validation_messages(exc: ValidationError) -> list[str]:
    # Pydantic reports union branches by type name ("function-after[...]", "list[...]");
    # those parts of the path mean nothing to an operator, so they are dropped.
    messages = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = tuple(_shown_part(p) for p in err["loc"]
                    if isinstance(p, int) or not _is_branch_tag(p))
        messages.append(f"{format_loc(loc)}: {redact(err['msg'])}")
    return messages


def _shown_part(part: int | str) -> int | str:
    """A path part as the message shows it. A user's mapping key can hold a secret
    (a whole `Authorization: Bearer sk-...` line pasted as a header *name*), so a key
    that is not a plain name is not quoted at all."""
    if isinstance(part, int) or _PLAIN_NAME.match(part):
        return part
    return "<a key that is not a plain name>"


def _is_branch_tag(part: str) -> bool:
    return "[" in part or part in {"str", "int", "list", "function-after", "literal"}


def load_data(data: Any, env: Mapping[str, str] | None = None, allow_unset: bool = False
              ) -> GatewayConfig:
    """Validate a parsed document and build the runtime config (or raise ConfigError).

    `allow_unset` (commands that call no upstream): a `${VAR}` that is not set is
    a warning, its reference left as written, instead of an error.
    """
    if not isinstance(data, dict):
        raise ConfigError(["<root>: the config must be a mapping"])
    if is_deeper_than(data, MAX_DEPTH):
        raise ConfigError([f"<root>: nests deeper than {MAX_DEPTH} levels"])
    document = data
    unset: list[str] | None = [] if allow_unset else None
    data, errors = expand(data, os.environ if env is None else env, unset)
    if errors:
        raise ConfigError(errors)
    try:
        raw = Root.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_messages(exc)) from exc
    config = build(raw, digest(mask_secrets(data))[:12], document)
    warnings = (*(f"{u} (left as written; `serve` refuses to start without it)"
                  for u in unset or ()), *config.warnings)
    # The fingerprint covers the secrets too, so a rotated key is a new version to
    # apply. It is never shown: a hash of a secret lets anyone test guesses offline
    # (a 4-digit admin key fell in 4,822 tries), so the version shown is the hash
    # of the masked document.
    return dataclasses.replace(config, fingerprint=digest(data), warnings=warnings)


def digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def load_text(text: str, source: str = "<config>", env: Mapping[str, str] | None = None,
              allow_unset: bool = False) -> GatewayConfig:
    return load_data(parse_document(text, source), env, allow_unset)


def load_file(path: str | Path, env: Mapping[str, str] | None = None,
              allow_unset: bool = False) -> GatewayConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{p}: cannot read: {exc.strerror}"]) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{p}: not UTF-8 text (byte {exc.start})"]) from exc
    return load_text(text, str(p), env, allow_unset)
