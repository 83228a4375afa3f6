"""The one-prompt decision (a request's path) decides exactly as the batch path does.

`SemanticRouter.route` on one turn takes `References.score_one` and the cheap rule;
`route_many` (eval, calibrate, the playground) takes `References.score` and
`_own_turns`. A batch of one computes what the request path did before it had a path
of its own, so the two must agree to the last bit. A larger batch multiplies with a
matrix-matrix product instead of a matrix-vector one, whose float32 sums may differ in
the last place: there the decisions must agree and the scores within 1e-6.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from semproxy.config.loader import load_data
from semproxy.embeddings import Vectors
from semproxy.quality.clinc150 import convert
from semproxy.quality.conversations import load_conversations
from semproxy.runtime.compile import router_for
from semproxy.semantic.decision import Decision, decide
from semproxy.semantic.query import RoutingInput
from semproxy.semantic.router import SemanticRouter
from semproxy.semantic.scorer import PromptScorer, ScoredInstance
from semproxy.semantic.similarity import rank

CLINC = Path(__file__).resolve().parents[2] / "../shared/data/clinc150_train_val.json"
CONVERSATIONS = Path(__file__).resolve().parents[1] / "quality/data/conversations"
needs_clinc = pytest.mark.skipif(not CLINC.exists(), reason=f"CLINC150 data not found at {CLINC}")

TOPICS = {
    "code": ["write a python function that parses a csv file", "fix this null pointer exception",
             "why does my rust code fail the borrow checker", "write a sql query joining orders"],
    "writing": ["translate this paragraph from english to german", "proofread this email",
                "summarize this article in three sentences", "write a short poem about the sea"],
    "science": ["what is the derivative of sine of x squared", "why is the sky blue",
                "explain how photosynthesis turns light into sugar", "how do black holes form"],
}
PROMPTS = [f"{verb} {topic} {style} (ref {n})" for n, (verb, topic, style) in enumerate(
    (v, t, s) for v in ("explain", "debug", "translate", "summarize", "compare")
    for t in ("a recursive sql query", "the french revolution", "a sonnet about rain",
              "quantum entanglement", "a failing pytest fixture", "my grocery list")
    for s in ("for a beginner", "step by step", "in plain english"))]


def local_route(**balancer: Any) -> dict[str, Any]:
    instances: list[dict[str, Any]] = [
        {"name": name, "provider": "echo", "weight": 1, "examples": examples}
        for name, examples in TOPICS.items()]
    instances.append({"name": "default", "provider": "echo", "weight": 1, "catchall": True})
    return {"routes": [{"id": "r", "uri": "/v1/chat/completions", "plugins": {
        "ai-proxy-multi": {"balancer": {"algorithm": "semantic", "threshold": 0.3, **balancer},
                           "embeddings": {"provider": "local"}, "instances": instances}}}]}


async def request_and_batch(config: dict[str, Any], queries: Sequence[RoutingInput]
                            ) -> tuple[list[Decision], list[Decision], list[Decision]]:
    """Each query routed as a request (fresh router, so no decision is remembered from
    the batches), as a batch of one, and all of them as one batch."""
    loaded = load_data(config, {})
    async with router_for(loaded, loaded.routes[0].id) as router:
        alone = [(await router.route(q)).decision for q in queries]
    async with router_for(loaded, loaded.routes[0].id) as router:
        ones = [(await router.route_many([q]))[0] for q in queries]
        together = await router.route_many(queries)
    return alone, ones, together


def assert_same_decisions(alone: list[Decision], ones: list[Decision],
                          together: list[Decision], exact: bool = True) -> None:
    if exact:
        assert alone == ones  # every field, every score to the last bit
    for a, b in zip(alone, together if exact else ones, strict=True):
        assert (a.pick, a.reason, a.cleared, a.context, a.thresholds) == \
            (b.pick, b.reason, b.cleared, b.context, b.thresholds)
        assert [n for n, _ in a.ranking] == [n for n, _ in b.ranking]
        assert np.allclose([s for _, s in a.ranking], [s for _, s in b.ranking],
                           rtol=0, atol=1e-6)


@pytest.mark.parametrize("balancer", [{}, {"center": True}, {"min_margin": 0.02},
                                      {"aggregation": "max_local_centroid", "k": 3},
                                      {"aggregation": "top_k_mean"}],
                         ids=["max", "center", "margin", "local_centroid", "top_k_mean"])
async def test_a_request_decides_as_a_batch_of_one_on_the_local_model(
        balancer: dict[str, Any]) -> None:
    queries = [RoutingInput(p) for p in PROMPTS]
    alone, ones, together = await request_and_batch(local_route(**balancer), queries)
    assert {d.reason for d in alone} >= {"matched", "below_threshold"}
    assert_same_decisions(alone, ones, together)


@needs_clinc
@pytest.mark.parametrize("balancer", [{}, {"aggregation": "max", "center": False},
                                      {"aggregation": "max"}],
                         ids=["converter-defaults", "max", "max-centered"])
async def test_a_request_decides_as_the_batch_does_on_clinc150(
        tmp_path: Path, balancer: dict[str, Any]) -> None:
    config_path, data = convert(CLINC, tmp_path, k=16)
    raw = yaml.safe_load(config_path.read_text())
    raw["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"].update(balancer)
    raw["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]["threshold"] = 0.2
    prompts = [json.loads(line)["prompt"] for line in data.read_text().splitlines()]
    assert len(prompts) > 3000
    alone, ones, together = await request_and_batch(raw, [RoutingInput(p) for p in prompts])
    assert len({d.pick for d in alone}) == 11  # ten domains and the catchall
    assert_same_decisions(alone, ones, together)


@needs_clinc
@pytest.mark.parametrize("name", ["test", "test2", "test3"])
async def test_conversations_decide_as_the_batch_does(tmp_path: Path, name: str) -> None:
    config_path, _ = convert(CLINC, tmp_path, k=16)
    raw = yaml.safe_load(config_path.read_text())
    raw["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]["context"] = "conversation"
    conversations = load_conversations(CONVERSATIONS / f"{name}.jsonl")
    loaded = load_data(raw, {})
    async with router_for(loaded, loaded.routes[0].id) as router:
        queries = [router.narrowed(c.item.routing_input()) for c in conversations]
        turns = [router.narrowed(t.routing_input()) for c in conversations
                 for t in c.labelled_turns]
    assert any(len(q.earlier) >= 2 for q in queries)
    assert_same_decisions(*await request_and_batch(raw, turns))
    # A conversation's earlier turns come from the decision cache, scored in the batch of
    # an earlier request (as before the one-prompt path): the same decisions, scores
    # within the last float32 place.
    assert_same_decisions(*await request_and_batch(raw, queries), exact=False)


class SeededEmbedder:
    """Vectors drawn from a generator seeded by the text: any dimension and scale."""

    fingerprint = "seeded"

    def __init__(self, dim: int, scale: float = 1.0, dtype: type = np.float32) -> None:
        self.dim, self.scale, self.dtype = dim, scale, dtype

    async def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [np.random.default_rng(list(t.encode())).standard_normal(self.dim) * self.scale
                if t != "zero" else np.zeros(self.dim) for t in texts]
        return np.asarray(rows).astype(self.dtype)


@pytest.mark.parametrize(("instances", "examples", "dim", "scale", "center"), [
    (3, 16, 256, 1.0, False), (3, 16, 256, 1e-3, True), (20, 64, 384, 1.0, False),
    (200, 64, 64, 1e3, True), (1, 1, 8, 1.0, False)])
async def test_score_one_gives_the_bits_of_a_batch_of_one(
        instances: int, examples: int, dim: int, scale: float, center: bool) -> None:
    groups = [ScoredInstance(f"i{k}", tuple(f"ex {k} {j}" for j in range(examples)), (), 0.0)
              for k in range(instances)]
    scorer = PromptScorer(groups, SeededEmbedder(dim, scale), center=center)
    refs = await scorer.references()
    assert refs.plain
    for text in ["zero", *(f"prompt {n}" for n in range(40))]:
        row = (await SeededEmbedder(dim, scale).embed([text]))
        best, negative, generic = refs.score_one(row)
        scores, _, _ = refs.score(row)
        assert best == scores[0].tolist() and negative is None and generic is None
        assert (await scorer.score_one(text))[1] == best


async def test_a_float64_embedding_is_scored_as_float32_like_the_batch() -> None:
    groups = [ScoredInstance("a", ("x", "y"), (), 0.0), ScoredInstance("b", ("z",), (), 0.0)]
    scorer = PromptScorer(groups, SeededEmbedder(32, dtype=np.float64))
    refs = await scorer.references()
    row = await SeededEmbedder(32, dtype=np.float64).embed(["p"])
    assert refs.score_one(row)[0] == refs.score(row)[0][0].tolist()


async def test_routes_with_negatives_or_follow_ups_score_one_prompt_through_the_batch_code(
        ) -> None:
    groups = [ScoredInstance("a", ("x", "y"), ("n",), 0.0), ScoredInstance("b", ("z",), (), 0.0)]
    scorer = PromptScorer(groups, SeededEmbedder(16), followups=("make it shorter",))
    refs = await scorer.references()
    assert not refs.plain
    row = await SeededEmbedder(16).embed(["p"])
    scores, negative, generic = refs.score(row)
    assert negative is not None and generic is not None
    assert refs.score_one(row) == (scores[0].tolist(), negative[0].tolist(), float(generic[0]))


def test_a_scored_decision_is_the_dataclass_with_every_field_set() -> None:
    made = Decision.scored("a", "matched", ("a",), (("a", 0.5),), (0.3,))
    assert made == Decision(pick="a", reason="matched", cleared=("a",), ranking=(("a", 0.5),),
                            thresholds=(0.3,))
    assert set(vars(made)) == {f.name for f in dataclasses.fields(Decision)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.pick = "b"  # type: ignore[misc]
    assert made.scores_text == "a:0.5000"


@pytest.mark.parametrize("seed", range(200))
def test_the_rule_on_python_floats_ranks_as_rank_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    values = rng.choice([0.1, 0.3, 0.5, 0.7, -np.inf, np.nan], n) if seed % 3 == 0 \
        else rng.random(n).round(1)  # ties, and non-finite scores
    names = [f"i{k}" for k in range(n)]
    thresholds = rng.choice([0.2, 0.4, 0.6], n).tolist()
    negative = rng.random(n).round(1) if seed % 2 else None
    margin = 0.15 if seed % 5 == 0 else 0.0
    got = decide(names, values.tolist(), thresholds, "c", min_margin=margin,
                 negative=None if negative is None else negative.tolist())
    assert got == decide(names, values, thresholds, "c", min_margin=margin, negative=negative)
    cleared, ranking = rank(names, values, thresholds)
    assert got.ranking == tuple(ranking)
    allowed = [name for name, score in cleared
               if negative is None or not negative[names.index(name)] >= score]
    gap = ranking[0][1] - ranking[1][1] if len(ranking) > 1 else math.inf
    if not allowed:
        assert (got.pick, got.reason) == ("c", "below_threshold")
    elif margin and allowed[0] == ranking[0][0] and gap < margin:
        assert (got.pick, got.reason) == ("c", "low_margin")
    else:
        assert (got.pick, got.reason, got.cleared) == (allowed[0], "matched", tuple(allowed))


def test_a_negative_row_of_another_length_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        decide(["a", "b"], [0.5, 0.4], [0.1, 0.1], "c", negative=[0.1])


async def test_the_router_routes_one_turn_through_the_one_prompt_path() -> None:
    loaded = load_data(local_route(), {})
    async with router_for(loaded, "r") as router:
        assert isinstance(router, SemanticRouter) and router.cascade is None
        first = await router.route(RoutingInput(PROMPTS[0]))
        again = await router.route(RoutingInput(PROMPTS[0]))
    assert (first.cached, again.cached) == (False, True)
    assert again.decision is first.decision
