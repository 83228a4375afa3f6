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
from collections.abc import Mapping
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


def variables_outside_credentials(node: Any, path: str = "",
                                  keys: tuple[str, ...] = ()) -> list[str]:
    """Where a document sent over the admin API uses `${VAR}` outside credentials.

    Through the admin API the environment is filled in only where credentials go:
    anywhere else the value would show in answers and logs, and anyone holding
    the admin key could read every variable of the gateway's environment.
    """
    if isinstance(node, str):
        if VARIABLE.search(node) and not is_credential(keys):
            return [f"{path or '<root>'}: ${{VAR}} is filled in only in credentials "
                    f"({CREDENTIAL_PLACES}) when sent over the admin API"]
        return []
    if isinstance(node, dict):
        return [e for k, v in node.items() for e in variables_outside_credentials(
            v, f"{path}.{k}" if path else str(k), (*keys, str(k)))]
    if isinstance(node, list):
        return [e for i, v in enumerate(node)
                for e in variables_outside_credentials(v, f"{path}[{i}]", keys)]
    return []
