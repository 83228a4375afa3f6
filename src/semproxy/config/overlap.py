"""Routes that take paths from other routes: warned about, never refused.

A request goes to the route whose `uri` is its exact path, else to the route
with the longest prefix (`uri` ending in `*`) that holds it (runtime/routes.py).
So a route whose uri lies inside another route's prefix takes those paths from
it: `/v1/chat/*` added beside the quickstart's `/v1/*` serves every chat
completion, and the `/v1/*` route, with its semantic routing, no longer sees
one. That can be the intent; often it is not, and nothing else would say so.
`validate`, the admin API's answer to a write and the gateway's log show these
warnings (they travel with the config version).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RouteUri:
    index: int
    id: str
    uri: str  # as written: a trailing `*` makes it a prefix

    @property
    def is_prefix(self) -> bool:
        return self.uri.endswith("*")

    @property
    def base(self) -> str:
        return self.uri.rstrip("*")

    @property
    def name(self) -> str:
        return f"routes[{self.index}] (id {self.id}, uri {self.uri})"


def overlap_warnings(routes: Sequence[RouteUri]) -> list[str]:
    """One warning per pair of served routes where one takes paths from the other."""
    warnings = []
    for i, a in enumerate(routes):
        for b in routes[i + 1:]:
            warning = _same_uri(a, b) if a.uri == b.uri else _takes(a, b) or _takes(b, a)
            if warning is not None:
                warnings.append(warning)
    return warnings


def _same_uri(first: RouteUri, second: RouteUri) -> str:
    # The same exact path: the route listed last is kept. The same prefix: the first.
    winner, loser = (first, second) if first.is_prefix else (second, first)
    return (f"routes[{loser.index}].uri: never served: {winner.name} has the same uri and "
            "takes every request")


def _takes(outer: RouteUri, inner: RouteUri) -> str | None:
    """What `inner` takes from `outer`, when `outer` is a prefix that holds its uri."""
    if not outer.is_prefix or not inner.base.startswith(outer.base):
        return None
    taken = f"every path under {inner.base}" if inner.is_prefix else f"the path {inner.uri}"
    return (f"routes[{inner.index}].uri: takes {taken} from {outer.name}, which no longer "
            "sees those requests (an exact uri wins over a prefix, a longer prefix over a "
            "shorter one); give the routes disjoint uris unless that is meant")
