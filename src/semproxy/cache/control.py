"""What the client and the route's `bypass_on` rules say about one request.

Pure functions over the request headers, in the terms of RFC 9111 as far as
they apply to a gateway's own answer cache:

- `Cache-Control: no-store`: the request neither reads nor writes the cache
  (`X-AI-Cache-Status: BYPASS`).
- `Cache-Control: no-cache` (or `Pragma: no-cache`): the request does not read
  but its fresh answer replaces the entry (`REFRESH`).
- `Cache-Control: max-age=N`: only entries at most N seconds old may answer;
  `max-age=0` is a refresh.
- a `bypass_on` rule (`header` equals `equals`, as in APISIX): neither read
  nor write (`BYPASS`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from semproxy.config.cache import BypassRule

BYPASS = "BYPASS"
REFRESH = "REFRESH"
_MAX_AGE = re.compile(r"^max-age\s*=\s*\"?(\d{1,10})\"?$")


@dataclass(frozen=True, slots=True)
class ClientControl:
    """May this request read the cache, may its answer be written, and how old may a
    hit be (None: any age the TTL allows). `status` is BYPASS or REFRESH when the
    request will not read, for the `X-AI-Cache-Status` header."""

    read: bool = True
    write: bool = True
    max_age: int | None = None
    status: str | None = None


# What a request that says nothing about caching gets (most do): shared, not rebuilt.
READ_WRITE = ClientControl()


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:  # a plain dict of any case (a CIMultiDict answers above)
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    return value


def directives(value: str) -> dict[str, str | None]:
    """`no-cache, max-age=60` -> {"no-cache": None, "max-age": "60"} (names lower case)."""
    found: dict[str, str | None] = {}
    for part in value.split(","):
        name, _, arg = part.strip().partition("=")
        if name:
            found.setdefault(name.strip().lower(), arg.strip().strip('"') if _ else None)
    return found


def client_control(headers: Mapping[str, str], bypass_on: Sequence[BypassRule] | None = None
                   ) -> ClientControl:
    """The control of one request; unknown directives are ignored, as caches must."""
    if not headers:  # no header the cache reads (a bypass rule needs its header)
        return READ_WRITE
    if bypass_on and any(_header(headers, r.header) == r.equals for r in bypass_on):
        return ClientControl(read=False, write=False, status=BYPASS)
    found = directives(_header(headers, "cache-control") or "")
    if "no-store" in found:
        return ClientControl(read=False, write=False, status=BYPASS)
    pragma = (_header(headers, "pragma") or "").strip().lower()
    age = found.get("max-age")
    max_age = int(age) if age is not None and age.isdigit() else None
    if "no-cache" in found or (pragma == "no-cache" and not found) or max_age == 0:
        return ClientControl(read=False, write=True, status=REFRESH)
    return ClientControl(max_age=max_age)
