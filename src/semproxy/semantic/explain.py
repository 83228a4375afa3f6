"""`semproxy explain` and the admin explain endpoint: the gateway's decision, spelled out.

It runs the very router a request would use (same embedder chain, same
thresholds, same decision cache when it is the live one) and calls no LLM;
`runtime.compile.explain` builds one apart from any gateway for the CLI.
"""

from __future__ import annotations

import math
from typing import Any

from semproxy.governance.tiers import budget_pick
from semproxy.semantic.decision import Decision
from semproxy.semantic.query import RoutingInput
from semproxy.semantic.router import SemanticRouter
from semproxy.semantic.similarity import margin


async def explain_with(router: SemanticRouter, query: RoutingInput) -> dict[str, Any]:
    """The decision a request with this input gets, with every score and threshold."""
    decision = (await router.route(query)).decision
    # The thresholds this decision was made with: under `model: accurate` with
    # `threshold: auto` the strong stage has its own, learned on its own cosines.
    thresholds = dict(zip(router.names, decision.thresholds or router.thresholds, strict=True))
    gap = margin(list(decision.ranking))
    return {
        "route": router.route_id,
        "pick": decision.pick,
        "reason": decision.reason,
        "catchall": router.spec.catchall,
        "margin": None if math.isinf(gap) else round(gap, 4),
        "scores": [
            {"instance": name, "score": round(score, 4), "threshold": thresholds[name],
             "cleared": name in decision.cleared}
            for name, score in decision.ranking
        ],
        # Conversation routing: the user turns read (oldest first) and their weights.
        "context": None if not decision.context else [
            {"turn": text, "weight": weight}
            for text, weight in zip((*query.earlier, query.text), decision.context,
                                    strict=False)
        ],
        "budget": budget_tiers(router, decision, thresholds),
    }


def budget_tiers(router: SemanticRouter, decision: Decision, thresholds: dict[str, float]
                 ) -> list[dict[str, Any]] | None:
    """`balancer.budget_routing`: who would serve at each tier of a consumer's budget."""
    policy = router.spec.budget
    if policy is None:
        return None
    rows = []
    for tier in range(1, len(policy.keep_margin) + 1):
        choice = budget_pick(decision.pick, decision.ranking, thresholds, decision.cleared,
                             router.spec.catchall, tier, policy) if decision.matched else None
        rows.append({"tier": tier, "keep_margin": policy.keep_margin[tier - 1],
                     "serves": decision.pick if choice is None else choice.to,
                     "moved": choice is not None and choice.moved})
    return rows


def exact(threshold: float) -> str:
    """A threshold with every decimal it has (learned ones have 6, calibrated 4), at
    least 2: rounded to 2, a learned 0.137852 read as 0.14 and hid why 0.1381 cleared."""
    text = f"{threshold:.6f}".rstrip("0")
    return text + "0" * max(0, 2 - len(text.partition(".")[2]))


def render(result: dict[str, Any]) -> str:
    lines = [f"route {result['route']}: pick {result['pick']} ({result['reason']})"]
    for row in result["scores"]:
        mark = "*" if row["cleared"] else " "
        lines.append(f" {mark} {row['instance']:<24} {row['score']:>8.4f}  "
                     f"threshold {exact(row['threshold'])}")
    if not result["scores"]:
        lines.append("   (no scores: embedding failed or no user text)")
    if result["margin"] is not None:
        lines.append(f"margin to runner-up: {result['margin']:.4f}")
    for row in result.get("context") or ():
        lines.append(f"turn weight {row['weight']:g}: {row['turn'][:60]}")
    for row in result.get("budget") or ():
        lines.append(f"budget tier {row['tier']} (keep margin {row['keep_margin']:g}): "
                     f"{row['serves']}{' (moved)' if row['moved'] else ''}")
    lines.append(f"catchall: {result['catchall']}")
    return "\n".join(lines)
