"""APISIX `cors` on a route, checked and frozen once per config version.

APISIX's meanings: `*` allows any origin (or method, or header) and may not
be combined with `allow_credential`, which the CORS specification forbids;
`**` allows any even then (the origin and the request's headers are echoed
back). A list of origins (comma-separated) lets only those origins read the
answers; `allow_origins_by_regex`, when given, decides instead of the list.
`max_age` is how long a browser may keep a preflight's answer (-1: not at
all). The request path applies it in `server/cors.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from semproxy.config import schema as s

ALL_METHODS = "GET,POST,PUT,DELETE,PATCH,HEAD,OPTIONS,CONNECT,TRACE"


@dataclass(frozen=True, slots=True)
class CorsSpec:
    any_origin: bool  # `*`: any origin, answered `*`
    echo_origin: bool  # `**`: any origin, answered with the request's own
    origins: frozenset[str]
    patterns: tuple[re.Pattern[str], ...]  # allow_origins_by_regex: decides when given
    methods: str
    headers: str | None  # None: echo Access-Control-Request-Headers (`**`)
    expose: str
    max_age: str
    credentials: bool

    def allowed_origin(self, origin: str | None) -> str | None:
        """The Access-Control-Allow-Origin value for a request from `origin`; None when
        that origin may not read the answer."""
        if self.patterns:
            return origin if origin and any(p.fullmatch(origin) for p in self.patterns) \
                else None
        if self.any_origin:
            return "*"
        if self.echo_origin:
            return origin or "*"
        return origin if origin in self.origins else None


def build_cors(cors: s.Cors, path: str, add: Callable[[str, str], None]) -> CorsSpec | None:
    """The route's CORS policy; every problem is reported at its field through `add`."""
    if cors.allow_credential:
        for name in ("allow_origins", "allow_methods", "allow_headers", "expose_headers"):
            if getattr(cors, name) == "*":
                add(f"{path}.{name}", "'*' cannot be used with allow_credential: true (the "
                    "CORS specification forbids it); list the values, or '**' to allow any")
    patterns = []
    for k, pattern in enumerate(cors.allow_origins_by_regex or ()):
        try:
            patterns.append(re.compile(pattern))
        except re.error as exc:
            add(f"{path}.allow_origins_by_regex[{k}]", f"not a regular expression: {exc}")
    origins = frozenset(o.strip() for o in cors.allow_origins.split(",") if o.strip())
    return CorsSpec(
        any_origin=cors.allow_origins == "*", echo_origin=cors.allow_origins == "**",
        origins=origins, patterns=tuple(patterns),
        methods=ALL_METHODS if cors.allow_methods == "**" else cors.allow_methods,
        headers=None if cors.allow_headers == "**" else cors.allow_headers,
        expose=cors.expose_headers, max_age=str(cors.max_age),
        credentials=cors.allow_credential)
