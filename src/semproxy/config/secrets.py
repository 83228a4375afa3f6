"""Where a config's values come from the environment: `${VAR}` and APISIX `$env://`.

`${VAR}` (or `${VAR:-default}`) is filled in everywhere in a config file: the
operator writes the file and owns the environment. APISIX's secret references
are resolved only where APISIX resolves them, in credentials (`CREDENTIAL`
below): `$env://NAME` is the variable, `$env://NAME/key` the string `key` of the
JSON object the variable holds. `$secret://` names a secret manager (Vault, AWS)
that semproxy does not talk to, so it is refused with the fix, never sent on
as literal text; so is a shell-style `$KEY`, which no config format expands.

Each step reads the document as written, so a value that came out of the
environment is never scanned again (a password may contain `$`).

A variable that is not set is an error, except for the commands that never
call an upstream (`validate`, `explain`, `eval`, `calibrate`, `tune`): they
pass an `unset` list, and such a reference is then left as written and
reported there, so a config can be checked in CI or tuned on a laptop
without its secrets. `serve` always refuses.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import orjson

# ${VAR} or ${VAR:-default} (the default is used when VAR is unset).
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_ENV_REF = re.compile(r"\$env://([A-Za-z_][A-Za-z0-9_]*)(?:/([^/\s]+))?")
# `${VAR}` and `$env://` together, in one pass, so neither re-reads what the other put in.
_ANY_REF = re.compile(f"{VARIABLE.pattern}|{_ENV_REF.pattern}")
# Shell style, as environment variables are named: `Bearer $OPENAI_KEY`.
_BARE_VAR = re.compile(r"\$([A-Z_][A-Z0-9_]*)\b")
_SECRET_REF = "$secret://"
CREDENTIAL_PLACES = ("auth.header.*, auth.query.*, admin.key, consumers[].plugins.key-auth.key, "
                     "checks.active.req_headers[]")


def is_credential(keys: tuple[str, ...]) -> bool:
    """Whether the value at this chain of mapping keys (list indices left out) is a
    credential: where APISIX takes secret references and semproxy masks on show."""
    return ((len(keys) >= 3 and keys[-3] == "auth" and keys[-2] in ("header", "query"))
            or keys[-2:] in (("admin", "key"), ("key-auth", "key"), ("ai-cache", "redis_password"))
            or keys[-3:] == ("checks", "active", "req_headers")
            or (keys[-1:] == ("api_key",) and "ai-cache" in keys))


def expand(node: Any, env: Mapping[str, str], unset: list[str] | None = None
           ) -> tuple[Any, list[str]]:
    """The document with its references filled in, and one "path: problem" per failure.

    With `unset`, a variable that is not set is no failure: its reference is left
    as written and "path: environment variable NAME is not set" goes to `unset`.
    """
    errors: list[str] = []
    return _walk(node, _Found(env, errors, unset), (), ""), errors


class _Found:
    """Where one expansion reads variables and reports what it could not fill."""

    def __init__(self, env: Mapping[str, str], errors: list[str], unset: list[str] | None
                 ) -> None:
        self.env = env
        self.errors = errors
        self.unset = unset

    def missing(self, path: str, name: str, written: str) -> str:
        """What an unset variable without a default becomes (and its report)."""
        message = f"{path}: environment variable {name} is not set"
        if self.unset is None:
            self.errors.append(message)
            return ""
        self.unset.append(message)
        return written


def _walk(node: Any, found: _Found, keys: tuple[str, ...], path: str) -> Any:
    if isinstance(node, str):
        return _string(node, found, is_credential(keys), path or "<root>")
    if isinstance(node, dict):
        return {k: _walk(v, found, (*keys, str(k)), f"{path}.{k}" if path else str(k))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_walk(v, found, keys, f"{path}[{i}]") for i, v in enumerate(node)]
    return node


def _string(text: str, found: _Found, is_secret_place: bool, path: str) -> str:
    if "$" not in text:
        return text
    problem = _refusal(text, is_secret_place)
    if problem is not None:
        found.errors.append(f"{path}: {problem}")
        return text
    env = found.env

    def fill(m: re.Match[str]) -> str:
        if is_secret_place and m.group(3) is not None:  # VARIABLE alone has two groups
            if m.group(3) not in env:
                return found.missing(path, m.group(3), m.group(0))
            return _env_ref(m.group(3), m.group(4), env, path, found.errors)
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        if default is None:
            return found.missing(path, name, m.group(0))
        return default

    # Outside credentials `_refusal` has turned any $env:// away: only ${VAR} is left.
    return _ANY_REF.sub(fill, text)


def _refusal(text: str, is_secret_place: bool) -> str | None:
    """Why this value's references cannot be resolved; the message never quotes the value."""
    if _SECRET_REF in text:
        return ("$secret:// needs a secret manager, which semproxy does not use; put the "
                "secret in an environment variable and write $env://NAME or ${NAME}")
    if "$env://" in text and not is_secret_place:
        return (f"$env:// is resolved only in credentials ({CREDENTIAL_PLACES}); "
                "write ${NAME} here")
    if is_secret_place:
        bare = _BARE_VAR.search(_ANY_REF.sub("", text))
        if bare is not None:
            name = bare.group(1)
            return f"${name} is not expanded; write ${{{name}}} (or $env://{name})"
    return None


def _env_ref(name: str, key: str | None, env: Mapping[str, str], path: str,
             errors: list[str]) -> str:
    """`$env://name` or `$env://name/key` of a variable that is set."""
    if key is None:
        return env[name]
    try:
        value = orjson.loads(env[name])
    except orjson.JSONDecodeError:
        value = None
    found = value.get(key) if isinstance(value, dict) else None
    if not isinstance(found, str):
        errors.append(f"{path}: environment variable {name} does not hold a JSON object "
                      f"with a string {key!r}")
        return ""
    return found


# Lists whose items pair an instance, route or consumer with its stored twin.
IDENTITY = ("id", "name", "username")


def twin_index(item: Any, index: int, stored: list[Any]) -> int | None:
    """Where the stored item that `item` stands for is in `stored`: the item with the
    same id/name/username, else the one at the same place. By name first, so
    reordered instances never take each other's values."""
    if isinstance(item, dict):
        for key in IDENTITY:
            if key in item:
                return next((j for j, old in enumerate(stored)
                             if isinstance(old, dict) and old.get(key) == item[key]), None)
    return index if index < len(stored) else None


def admin_references(new: Any, stored: Any, allowed: Collection[str], path: str = "",
                     keys: tuple[str, ...] = ()) -> list[str]:
    """Where a document or route sent over the admin API names the environment itself.

    The environment belongs to the operator: a reference is filled in when the
    file the operator wrote holds it at that place (`stored`, as written), so a
    route read, edited and sent back keeps its `${KEY}`. Any other reference in
    admin input could copy any variable of the gateway into a header sent to an
    endpoint the same write chooses, so it is refused unless the variable is in
    `admin.allow_env`, and only where credentials go. The messages are the same
    whether the variable is set or not.
    """
    if isinstance(new, str):
        return [] if new == stored else _foreign(new, allowed, keys, path or "<root>")
    if isinstance(new, dict):
        old = stored if isinstance(stored, dict) else {}
        return [e for k, v in new.items() for e in admin_references(
            v, old.get(k), allowed, f"{path}.{k}" if path else str(k), (*keys, str(k)))]
    if isinstance(new, list):
        olds = stored if isinstance(stored, list) else []
        problems = []
        for i, v in enumerate(new):
            twin: Any
            if isinstance(v, str) and v in olds:
                twin = v  # a string the stored list holds, wherever it stands now
            else:
                j = twin_index(v, i, olds)
                twin = None if j is None else olds[j]
            problems += admin_references(v, twin, allowed, f"{path}[{i}]", keys)
        return problems
    return []


def _foreign(text: str, allowed: Collection[str], keys: tuple[str, ...], path: str
             ) -> list[str]:
    names = [m.group(1) or m.group(3) for m in _ANY_REF.finditer(text)]
    if not names:
        return []
    if not is_credential(keys):
        return [f"{path}: ${{VAR}} is filled in only in credentials ({CREDENTIAL_PLACES}) "
                "when sent over the admin API"]
    return [f"{path}: environment variable {name} may not be named over the admin API "
            "(admin.allow_env lists those that may)" for name in names if name not in allowed]
