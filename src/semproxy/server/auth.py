"""Client authentication (APISIX key-auth): which consumer is calling, if the route asks.

Keys are kept only as sha256 digests and compared in constant time; the
presented key is never logged or echoed back.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from aiohttp import web

from semproxy.config.spec import RouteSpec
from semproxy.errors import UnauthorizedError


def presented_key(request: web.Request, spec: RouteSpec) -> str:
    assert spec.key_auth is not None
    auth = request.headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return request.headers.get(spec.key_auth.header) or request.query.get(spec.key_auth.query, "")


def authenticate(request: web.Request, spec: RouteSpec, consumers: Mapping[bytes, str]
                 ) -> str | None:
    """The consumer name for this request, None when the route needs no key."""
    if spec.key_auth is None:
        return None
    key = presented_key(request, spec)
    if not key:
        raise UnauthorizedError("missing API key")
    digest = hashlib.sha256(key.encode()).digest()
    found = None
    # Compare against every stored digest so the time taken does not depend on
    # which consumer (if any) matched.
    for stored, name in consumers.items():
        if hmac.compare_digest(stored, digest):
            found = name
    if found is None:
        raise UnauthorizedError("invalid API key")
    return found
