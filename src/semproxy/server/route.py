"""route: the balancer's or the semantic router's decision, and the candidate order.

A request whose `model` names instances of the route (their model, name or an
alias: `protocols/models.py`) goes to those instances only, balanced and
failing over among them; on a `strict_models` route a name it does not know
is a 404. Otherwise, on a semantic route the user's words are scored first
(failing open to the catchall: routing never turns a request into an error)
and, in debug mode, the shadow table decides too. Then the candidates are
ordered and the first one picked, leaving out instances that cannot take the
request: unhealthy ones, ones that cannot serve its protocol, and ones a gate
(an instance out of its own quota) refuses. The response cache keys on that
first pick; the call phase starts with it.
"""

from __future__ import annotations

import time
from collections.abc import Set

from semproxy.errors import BadRequestError, UnavailableError
from semproxy.governance.tiers import TierPolicy, budget_pick, reordered
from semproxy.protocols.embeddings import EMBEDDINGS
from semproxy.protocols.models import AUTO, not_found
from semproxy.runtime.legs import LegTable
from semproxy.runtime.routes import Candidates, RouteState
from semproxy.semantic.decision import Decision
from semproxy.server.exchange import Answer, Exchange
from semproxy.server.shadow import shadow_decision, shadow_input


class RoutePhase:
    def __init__(self, route: RouteState) -> None:
        self.route = route
        spec = route.spec
        self.inline_shadow = spec.shadow is not None and spec.shadow.inline
        self.budget = spec.semantic.budget if spec.semantic is not None else None
        # A model name -> the instances not serving it (left out when it is asked for).
        names = frozenset(route.names)
        self.others = {model: names.difference(serving)
                       for model, serving in route.models.items()}

    def left_out(self, model: str | None) -> frozenset[str] | None:
        """The instances a request for `model` may not go to; None: the gateway picks."""
        if model is None or model == AUTO:
            return None
        others = self.others.get(model)
        if others is None and self.route.spec.strict_models:
            raise not_found(model)
        return others

    async def run(self, exchange: Exchange) -> Answer | None:
        route = self.route
        parsed = exchange.parsed
        assert parsed is not None
        others = self.left_out(exchange.model)
        if others is None and route.semantic is not None and parsed.query is not None:
            exchange.decision = await semantic_decision(route, exchange)
        if self.inline_shadow:
            # debug mode: the shadow decides before the answer, for X-AI-Shadow-Route
            query = shadow_input(route, exchange)
            exchange.shadow = None if query is None else await shadow_decision(route, query)
        legs = exchange.legs = route.legs[exchange.protocol.name]
        unusable = route.health.unusable(route.names)
        if parsed.unsupported is not None or legs.unable:
            unusable |= unable(exchange, route, legs)
        if others is not None:
            unusable |= others
        exchange.skip = unusable
        candidates = exchange.candidates = route.candidates(exchange.decision, exchange.hash_key)
        if self.budget is not None and exchange.reservation is not None \
                and exchange.reservation.tier and exchange.decision is not None:
            budget_route(route, exchange, exchange.decision, self.budget, candidates)
        exchange.pick = candidates.next(exchange.skip) if exchange.gates is None \
            else await next_candidate(exchange, exchange.skip)
        if exchange.pick is None:
            raise exchange.refusal or UnavailableError(
                f"route {route.spec.id} has no instance that can take traffic")
        return None


async def semantic_decision(route: RouteState, exchange: Exchange) -> Decision:
    """Route on the user's own words as the client protocol tells them (and on the
    earlier user turns of the chat payload when the route reads conversations)."""
    semantic, parsed, observer = route.semantic, exchange.parsed, exchange.observer
    assert semantic is not None and parsed is not None and parsed.query is not None
    started = time.monotonic()
    decision, cached = await semantic.route(
        semantic.query(parsed.payload.get("messages", ()), parsed.query))
    if decision.ranking:
        observer.on_embedding(route.spec.id, None if cached else time.monotonic() - started,
                              cached)
    observer.on_semantic(route.spec.id, decision,
                         parsed.query.text if route.spec.logging.payloads else None)
    return decision


def budget_route(route: RouteState, exchange: Exchange, decision: Decision, policy: TierPolicy,
                 candidates: Candidates) -> None:
    """A consumer past a tier of its budget: a weak match of a dearer instance moves to a
    cheaper one by meaning (governance/tiers.py); the choice is kept for the headers, the
    access line and the decision feed."""
    if not decision.matched or route.semantic is None or exchange.reservation is None:
        return
    thresholds = dict(zip(route.semantic.names, decision.thresholds, strict=False))
    choice = exchange.budget = budget_pick(
        decision.pick, decision.ranking, thresholds, decision.cleared, route.semantic.spec.catchall,
        exchange.reservation.tier, policy)
    if choice is None:
        return
    if choice.moved:
        candidates.preferred = reordered(candidates.preferred, choice.to)
    exchange.observer.on_budget(route.spec.id, choice.tier, choice.pick, choice.to)


def unable(exchange: Exchange, route: RouteState, legs: LegTable) -> frozenset[str]:
    """Instances that cannot serve this request at all (the failover loop skips them)."""
    parsed = exchange.parsed
    assert parsed is not None
    if parsed.unsupported is not None:  # no Chat Completions form: native instances only
        if len(legs.not_native) == len(route.names):
            raise parsed.unsupported
        return legs.not_native
    if legs.unable and len(legs.unable) == len(route.names):
        what = "embeddings" if exchange.protocol.name == EMBEDDINGS else \
            f"the {exchange.protocol.name} protocol"
        raise BadRequestError(f"route {route.spec.id} has no instance that serves {what}")
    return legs.unable


async def next_candidate(exchange: Exchange, exclude: Set[str]) -> str | None:
    """The next candidate not in `exclude` that every gate allows."""
    assert exchange.candidates is not None
    name = exchange.candidates.next(exclude)
    if exchange.gates is None:
        return name
    refused = set(exclude)
    while name is not None and not all([await g.allows(exchange, name)
                                        for g in exchange.gates]):
        refused.add(name)
        name = exchange.candidates.next(refused)
    return name
