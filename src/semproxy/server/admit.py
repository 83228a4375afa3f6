"""admit: limits and budgets, before the route decision. The room spend governance plugs into.

Nothing is admitted or refused here yet: `admission_for` finds no admission
for any route, so the phase is left out of every route's pipeline and costs
nothing. Governance (issue 25) plugs in by returning, per route and config
version, an object that is both halves of this phase:

- `run` reserves the request's worst case before the route decision. It reads
  the consumer (`exchange.consumer`), the route (`exchange.route`), the end
  user (`exchange.end_user()`), the body (`exchange.payload`: messages for an
  input estimate, `max_tokens`). It may refuse by raising a `GatewayError`
  with status 429 and `headers` (`Retry-After`): the relay renders it in the
  client's protocol. It may lower `max_tokens` in `exchange.payload` (and in
  `exchange.parsed.native`, the body a native instance gets). It adds its
  rate-limit headers to every answer through `exchange.headers`, and keeps
  instances out of their own quota out of the failover loop by appending an
  `InstanceGate` to `exchange.gates`.
- `account` runs after the answer, whatever ended the request: it commits
  `exchange.usage` (`exchange.source` says who answered: "upstream", or a phase
  such as the cache, whose answers cost no upstream tokens) or releases the
  reservation when nothing was answered (`exchange.status` >= 400 with no usage).
"""

from __future__ import annotations

from typing import Protocol

from semproxy.runtime.routes import RouteState
from semproxy.server.exchange import Answer, Exchange


class Admission(Protocol):
    """One route's admission for one config version (the admit phase and its accounting)."""

    async def run(self, exchange: Exchange) -> Answer | None:
        """Reserve, refuse (raise) or clamp; always None: admission answers no request."""

    async def account(self, exchange: Exchange) -> None:
        """Commit the usage of the answer, or release the reservation."""


def admission_for(route: RouteState) -> Admission | None:
    """The admission of `route`, None while no limit applies to it."""
    return None
