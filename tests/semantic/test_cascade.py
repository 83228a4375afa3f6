"""The accurate-mode cascade: which prompts are ambiguous, and who decides them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tests.conftest import route_config

from semproxy.config.loader import load_data
from semproxy.embeddings.strong import StrongEmbedder, StrongWorker
from semproxy.semantic.cascade import CascadeRule, CascadeScorer
from semproxy.semantic.query import RoutingInput
from semproxy.semantic.router import SemanticRouter, open_router, strong_readiness
from semproxy.semantic.scorer import PromptScorer, ScoredInstance


def test_a_clear_winner_far_from_its_threshold_is_not_ambiguous() -> None:
    rule = CascadeRule(margin=0.1, near_threshold=0.05)
    scores = np.array([[0.9, 0.5],    # clear: lead 0.4, 0.4 above threshold
                       [0.9, 0.85],   # lead 0.05 < 0.1
                       [0.52, 0.1],   # 0.02 above its threshold 0.5
                       [0.3, 0.1]])   # far below its threshold: clearly out of scope
    assert rule.ambiguous(scores, [0.5, 0.5]).tolist() == [False, True, True, False]


def test_one_instance_is_ambiguous_only_near_its_threshold() -> None:
    rule = CascadeRule(margin=0.1, near_threshold=0.05)
    assert rule.ambiguous(np.array([[0.9], [0.52]]), [0.5]).tolist() == [False, True]


class KeywordEmbedder:
    """Maps texts to 2-D vectors by keyword: 'x' -> x axis, 'y' -> y axis, else a blend."""

    def __init__(self, name: str, blend: tuple[float, float]) -> None:
        self.fingerprint = name
        self.blend = blend
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        table = {"x": (1.0, 0.0), "y": (0.0, 1.0)}
        return np.array([table.get(t.split()[0], self.blend) for t in texts], np.float32)

    def embed_blocking(self, texts: Sequence[str]) -> np.ndarray:
        return asyncio.run(self.embed(texts))

    def load(self) -> Callable[[Sequence[str]], np.ndarray]:
        """What `StrongWorker` calls to load the model."""
        return self.embed_blocking

    async def aclose(self) -> None:
        pass


def _scorer(embedder: object) -> PromptScorer:
    instances = [ScoredInstance("ex", ("x",), (), 0.5), ScoredInstance("why", ("y",), (), 0.5)]
    return PromptScorer(instances, embedder)  # type: ignore[arg-type]


async def test_the_strong_model_decides_only_the_ambiguous_prompts() -> None:
    fast = KeywordEmbedder("fast", (0.7, 0.7))  # unknown words: a near-tie under the fast model
    strong_model = KeywordEmbedder("strong", (0.2, 0.98))  # ... which the strong one resolves
    worker = StrongWorker(lambda: strong_model.embed_blocking)
    cascade = CascadeScorer(_scorer(fast), _scorer(StrongEmbedder(worker, "strong")))
    await cascade.references()
    await asyncio.sleep(0.2)  # the strong references build in the background
    (_, clear, _, _), stage = await cascade.score_turn("x marks the spot")
    assert stage == "fast" and clear[0].tolist() == [1.0, 0.0]
    (_, resolved, _, _), stage = await cascade.score_turn("something vague")
    assert stage == "strong" and resolved[0].argmax() == 1
    assert strong_model.calls[-1] == ["something vague"]
    await worker.aclose()


async def test_a_full_strong_queue_keeps_the_fast_decision() -> None:
    fast = KeywordEmbedder("fast", (0.7, 0.7))
    strong_model = KeywordEmbedder("strong", (0.2, 0.98))
    worker = StrongWorker(lambda: strong_model.embed_blocking, capacity=0)
    cascade = CascadeScorer(_scorer(fast), _scorer(StrongEmbedder(worker, "strong")))
    await cascade.references()
    await asyncio.sleep(0.2)
    (_, scores, _, _), stage = await cascade.score_turn("something vague")
    assert stage == "shed" and worker.shed == 1
    assert scores[0, 0] == scores[0, 1]  # the fast model's tie
    await worker.aclose()


async def test_before_the_strong_references_exist_the_fast_model_decides() -> None:
    fast = KeywordEmbedder("fast", (0.7, 0.7))
    strong_model = KeywordEmbedder("strong", (0.2, 0.98))
    worker = StrongWorker(lambda: strong_model.embed_blocking)
    cascade = CascadeScorer(_scorer(fast), _scorer(StrongEmbedder(worker, "strong")))
    _, stage = await cascade.score_turn("something vague")
    assert stage == "strong_unavailable"
    await asyncio.sleep(0.2)
    _, stage = await cascade.score_turn("something vague")
    assert stage == "strong"
    await worker.aclose()


async def test_offline_scoring_re_scores_the_ambiguous_rows_in_one_batch() -> None:
    fast = KeywordEmbedder("fast", (0.7, 0.7))
    strong_model = KeywordEmbedder("strong", (0.2, 0.98))
    worker = StrongWorker(lambda: strong_model.embed_blocking)
    cascade = CascadeScorer(_scorer(fast), _scorer(StrongEmbedder(worker, "strong")))
    (_, scores, _, _), stages = await cascade.score_turns(["x a", "vague b", "y c", "vague d"])
    assert stages == ["fast", "strong", "fast", "strong"]
    assert strong_model.calls[-1] == ["vague b", "vague d"]
    assert scores.argmax(axis=1).tolist() == [0, 1, 1, 1]
    await worker.aclose()


async def test_under_the_cascade_a_turn_the_strong_model_decides_is_checked_against_the_follow_ups(
) -> None:
    # "something vague" ties under the fast model, so MiniLM's stand-in re-scores it:
    # "why" 0.98, "ex" 0.2. Its view of the shipped follow-ups (all unknown words, the
    # same blend) scores 1.0, so the turn reads as a follow-up and the conversation stays
    # on "ex". A clear "y" turn, decided by the fast model, still moves it.
    fast = KeywordEmbedder("fast", (0.7, 0.7))
    strong_model = KeywordEmbedder("strong", (0.2, 0.98))
    worker = StrongWorker(lambda: strong_model.embed_blocking)
    instances = [{"name": n, "provider": "echo", "weight": 1, "options": {"model": n},
                  "examples": [n[-1]]}
                 for n in ("ex", "why")]
    config = load_data(route_config(instances, balancer={
        "algorithm": "semantic", "threshold": 0.5, "context": "conversation"},
        embeddings={"provider": "local"}), {})
    router = open_router(config.routes[0], fast,  # type: ignore[arg-type]
                         StrongEmbedder(worker, "strong"))
    await router.references()
    await asyncio.sleep(0.2)  # the strong references build in the background
    vague = (await router.route(RoutingInput("something vague", ("x marks the spot",)))).decision
    clear = (await router.route(RoutingInput("y sure", ("x marks the spot",)))).decision
    assert ["something vague"] in strong_model.calls  # the strong stage scored it
    assert (vague.pick, vague.context) == ("ex", (1.0, 0.0))
    assert (clear.pick, clear.context) == ("why", (0.0, 1.0))
    await worker.aclose()


def _vague_router(worker: StrongWorker, fast: KeywordEmbedder) -> SemanticRouter:
    """ex ('x') and why ('y'); 'something vague' ties under the fast model and goes to
    'why' under the strong one."""
    instances = [{"name": n, "provider": "echo", "weight": 1, "options": {"model": n},
                  "examples": [n[-1]]} for n in ("ex", "why")]
    config = load_data(route_config(instances, balancer={
        "algorithm": "semantic", "threshold": 0.5}, embeddings={"provider": "local"}), {})
    return open_router(config.routes[0], fast,  # type: ignore[arg-type]
                       StrongEmbedder(worker, "strong"))


async def test_a_decision_the_full_strong_queue_could_not_take_is_not_remembered() -> None:
    worker = StrongWorker(KeywordEmbedder("strong", (0.2, 0.98)).load, capacity=0)
    router = _vague_router(worker, KeywordEmbedder("fast", (0.7, 0.7)))
    await router.references()
    first = await router.route(RoutingInput("something vague"))
    again = await router.route(RoutingInput("something vague"))
    assert (first.cached, again.cached) == (False, False)  # asked again, not the shed guess
    assert router.stages["shed"] == 2
    clear = [await router.route(RoutingInput("x marks the spot")) for _ in range(2)]
    assert [r.cached for r in clear] == [False, True]  # the fast stage's own decisions are
    await worker.aclose()


async def test_a_decision_made_before_the_strong_stage_was_ready_is_not_remembered() -> None:
    worker = StrongWorker(KeywordEmbedder("strong", (0.2, 0.98)).load)
    router = _vague_router(worker, KeywordEmbedder("fast", (0.7, 0.7)))
    early = await router.route(RoutingInput("something vague"))  # nothing built yet
    assert (early.decision.pick, router.stages["strong_unavailable"]) == ("ex", 1)
    for _ in range(100):
        if router.strong_state == "ready":
            break
        await asyncio.sleep(0.02)
    later = await router.route(RoutingInput("something vague"))
    assert (later.cached, later.decision.pick, router.stages["strong"]) == (False, "why", 1)
    await worker.aclose()


async def test_the_router_is_ready_once_both_stages_are_and_says_when_the_strong_one_failed(
) -> None:
    worker = StrongWorker(KeywordEmbedder("strong", (0.2, 0.98)).load)
    router = _vague_router(worker, KeywordEmbedder("fast", (0.7, 0.7)))
    assert router.strong_state == "loading"
    await router.references()  # what the gateway awaits before it listens
    assert router.strong_state == "ready"
    assert (await router.route(RoutingInput("something vague"))).decision.pick == "why"

    def broken() -> Any:
        raise OSError("weights missing")

    dead = StrongWorker(broken)
    failed = _vague_router(dead, KeywordEmbedder("fast", (0.7, 0.7)))
    await failed.references()  # the fast stage serves: no exception
    assert failed.strong_state == "failed"
    assert strong_readiness([router, failed]) == "failed"
    assert strong_readiness([failed, _vague_router(dead, KeywordEmbedder("f", (0.7, 0.7)))]) \
        == "loading"
    routed = [await failed.route(RoutingInput("something vague")) for _ in range(2)]
    assert [r.cached for r in routed] == [False, False]
    assert failed.strong_state == "failed"  # retried, still reported failed (no flapping)
    await worker.aclose()
    await dead.aclose()
