"""lookup: the response cache, between the route decision and the upstream call. The room
the semantic response cache plugs into.

Nothing is looked up here yet: `cache_for` finds no cache for any route, so the
phase is left out of every route's pipeline and costs nothing. The response
cache (issue 26) plugs in by returning, per route and config version, an object
that is both halves of this phase:

- `run` looks the request up after the route phase. The exact key is made of
  the route (`exchange.route`), the instance that will serve (`exchange.pick`,
  its leg in `exchange.legs`: target model and `options`), the sampling
  parameters, tools and whole message list (`exchange.payload`); the semantic
  key of the decision's routing vector of the last user turn. A hit returns
  an `Answer`: a `MemoryReply` (`transport/memory.py`) holding the stored body
  or events, with `speaks` the converter that reads its protocol and `back`
  the one to the client's (`protocols/registry.conversion`); the relay sends it
  in the client's protocol and mode as it would an upstream's, and no upstream
  is called. It sets `exchange.source` to "cache". A miss returns None and
  may append a `StreamTap` to `exchange.taps` to see a streamed answer.
- `account` runs after the answer, whatever ended the request: it stores a
  complete answer (`exchange.complete`; a whole one is `exchange.response_body`
  as relayed, a stream's events came through its tap) when it came from the
  upstream (`exchange.source`).
"""

from __future__ import annotations

from typing import Protocol

from semproxy.runtime.routes import RouteState
from semproxy.server.exchange import Answer, Exchange


class ResponseCache(Protocol):
    """One route's response cache for one config version (the lookup phase and its store)."""

    async def run(self, exchange: Exchange) -> Answer | None:
        """A stored answer for this request, or None (the call phase goes on)."""

    async def account(self, exchange: Exchange) -> None:
        """Store the answer when it is complete and came from the upstream."""


def cache_for(route: RouteState) -> ResponseCache | None:
    """The response cache of `route`, None while it has none."""
    return None
