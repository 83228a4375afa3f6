"""The consistent-hash key of a request, per APISIX `hash_on` semantics."""

from __future__ import annotations

import re

from aiohttp import web

_VAR = re.compile(r"\$([A-Za-z0-9_]+)")


def request_var(request: web.Request, name: str) -> str:
    """A subset of the nginx variables APISIX routes can hash on."""
    if name.startswith("http_"):
        return request.headers.get(name[5:].replace("_", "-"), "")
    if name.startswith("arg_"):
        return request.query.get(name[4:], "")
    if name.startswith("cookie_"):
        return request.cookies.get(name[7:], "")
    simple = {
        "remote_addr": request.remote or "",
        "uri": request.path,
        "request_uri": request.path_qs,
        "host": request.host,
        "request_method": request.method,
    }
    return simple.get(name, "")


def hash_key(request: web.Request, hash_on: str, key: str | None, consumer: str | None) -> str:
    if hash_on == "header":
        value = request.headers.get(key or "", "")
    elif hash_on == "cookie":
        value = request.cookies.get(key or "", "")
    elif hash_on == "consumer":
        value = consumer or ""
    elif hash_on == "vars_combinations":
        value = _VAR.sub(lambda m: request_var(request, m.group(1)), key or "")
    else:
        value = request_var(request, key or "remote_addr")
    # An absent key would pin every such request to one instance; spread them by
    # client address instead, as APISIX does.
    return value or (request.remote or "")
