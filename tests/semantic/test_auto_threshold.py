"""`threshold: auto`: leave-one-out scores and the threshold rule, by hand."""

from __future__ import annotations

import time

import aiohttp
import numpy as np
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.semantic.auto_threshold import (
    NEAREST,
    background_prompts,
    closeness,
    learn,
    leave_one_out,
)
from semproxy.semantic.similarity import AGGREGATIONS, instance_scores, normalize

from .conftest import BANKING, COOKING, ask


def _best_example(prompts: np.ndarray, refs: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    return np.atleast_2d(instance_scores(prompts, refs, bounds))


def test_leave_one_out_scores_each_example_against_its_siblings_only() -> None:
    refs = np.array([[1, 0], [0.6, 0.8], [0, 1], [0, 1]], np.float32)
    bounds = np.array([0, 2, 3, 4])  # a: two examples, b: one, c: one
    own = leave_one_out(refs, bounds, _best_example)
    np.testing.assert_allclose(own[:2], [0.6, 0.6], rtol=1e-6)  # each sees only the other
    assert np.isnan(own[2:]).all()  # a lone example has no sibling to be compared with


def _whole_route_leave_one_out(refs: np.ndarray, bounds: np.ndarray, agg: str, k: int
                               ) -> np.ndarray:
    """The definition, spelled out: each example against the whole route without it."""
    out = np.full(len(refs), np.nan)
    owner = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    for j in range(len(refs)):
        if bounds[owner[j] + 1] - bounds[owner[j]] < 2:
            continue
        keep = np.r_[0:j, j + 1:len(refs)]
        out[j] = instance_scores(refs[j:j + 1], refs[keep], bounds - (bounds > j), agg,
                                 k)[0, owner[j]]
    return out


@pytest.mark.parametrize("aggregation", sorted(AGGREGATIONS))
def test_leave_one_out_equals_scoring_against_the_whole_route_without_the_example(
    aggregation: str,
) -> None:
    rng = np.random.default_rng(7)
    bounds = np.cumsum([0, *rng.integers(1, 12, size=9)]).astype(np.intp)
    refs = normalize(rng.normal(size=(int(bounds[-1]), 32)))

    def score(p: np.ndarray, r: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.atleast_2d(instance_scores(p, r, b, aggregation, 3))

    np.testing.assert_allclose(leave_one_out(refs, bounds, score),
                               _whole_route_leave_one_out(refs, bounds, aggregation, 3),
                               atol=1e-6)  # float32 products of other shapes round apart


def test_learning_on_8192_examples_takes_seconds_not_minutes() -> None:
    # 128 instances of 64 examples: scoring each example against the whole route took
    # 79 s per config apply; against its own siblings it is linear in the examples.
    rng = np.random.default_rng(0)
    refs = normalize(rng.normal(size=(8192, 256)))
    bounds = np.arange(0, 8193, 64, dtype=np.intp)
    started = time.perf_counter()
    own = leave_one_out(refs, bounds, lambda p, r, b: np.atleast_2d(
        instance_scores(p, r, b, "max_local_centroid", 3)))
    assert time.perf_counter() - started < 8
    assert np.isfinite(own).all()


def test_the_threshold_is_the_mean_of_the_examples_quartile_and_the_background_95th() -> None:
    own = np.array([0.2, 0.4, 0.6, 0.8, 1.0])  # lower quartile 0.4
    background = np.linspace(0, 1, 21)[:, None]  # 95th percentile 0.95
    assert learn(own, np.array([0, 5]), background, fallback=0.0) == (0.675,)


def test_without_background_or_siblings_the_other_half_decides() -> None:
    assert learn(np.array([0.2, 0.4, 0.6, 0.8, 1.0]), np.array([0, 5]),
                 np.zeros((0, 1)), fallback=0.0) == (0.4,)
    lone = learn(np.array([np.nan]), np.array([0, 1]), np.full((4, 1), 0.3), fallback=0.5)
    assert lone == (0.4,)


def test_the_shipped_background_set_is_large_and_has_no_comments() -> None:
    prompts = background_prompts()
    assert len(prompts) >= 300
    assert not any(p.startswith("#") for p in prompts)
    assert len(set(prompts)) == len(prompts)


async def test_a_route_with_threshold_auto_learns_thresholds_and_turns_away_off_topic_prompts(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    instances = [
        instance("banking", examples=BANKING),
        instance("cooking", examples=COOKING, threshold=0.2),
        instance("default", catchall=True),
    ]
    gw = await gateway(route_config(instances, embeddings={"provider": "local"},
                                    balancer={"algorithm": "semantic", "threshold": "auto",
                                              "expose_scores": True}))
    money = await ask(http, gw, chat("move fifty dollars from checking to my savings account"))
    chess = await ask(http, gw, chat("who won the chess world championship in 1972"))
    assert (money.status, money.served_by) == (200, "banking")
    assert (chess.served_by, chess.headers["X-AI-Semantic-Reason"]) == ("default",
                                                                       "below_threshold")
    learned = gw.gateway.table.routes[0].semantic.thresholds
    assert 0 < learned[0] < 1 and learned[0] != 0.2
    assert learned[1] == 0.2  # an instance's own threshold is kept


def test_closeness_is_the_mean_cosine_to_the_nearest_background_prompts() -> None:
    background = np.array([[1, 0], [0, 1], [0.6, 0.8]], np.float32)  # fewer than NEAREST
    np.testing.assert_allclose(closeness(np.array([[1, 0]], np.float32), background),
                               [(1 + 0 + 0.6) / 3], rtol=1e-6)
    # The background scored against itself: each row skips its own cosine of 1.
    np.testing.assert_allclose(closeness(background, background, skip_self=True),
                               [0.3, 0.4, 0.7], rtol=1e-6)
    # Only the NEAREST closest count: NEAREST copies of x, then as many of y.
    many = np.array([[1, 0]] * NEAREST + [[0, 1]] * NEAREST, np.float32)
    np.testing.assert_allclose(closeness(np.array([[1, 0], [0.6, 0.8]], np.float32), many),
                               [1.0, 0.8], rtol=1e-6)


async def _scores(gateway: GatewayFactory, http: aiohttp.ClientSession, weight: float,
                  prompts: list[str]) -> list[dict[str, float]]:
    instances = [
        instance("banking", examples=["what is my account balance", "transfer money to savings",
                                      "why was my card declined"]),
        instance("cooking", examples=["how long do i boil an egg", "give me a lasagna recipe",
                                      "what can i use instead of butter"]),
        instance("default", catchall=True),
    ]
    gw = await gateway(route_config(instances, embeddings={"provider": "local"},
                                    balancer={"algorithm": "semantic", "threshold": -1,
                                              "background_weight": weight,
                                              "expose_scores": True}))
    out = []
    for prompt in prompts:
        answer = await ask(http, gw, chat(prompt))
        pairs = answer.headers["X-AI-Semantic-Scores"].split(",")
        out.append({name: float(score) for name, score in (p.split(":") for p in pairs)})
    return out


async def test_background_weight_lowers_everyday_prompts_more_than_on_topic_ones(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    everyday = background_prompts()[0]
    prompts = [everyday, "transfer fifty dollars from my checking account"]
    plain = await _scores(gateway, http, 0.0, prompts)
    weighted = await _scores(gateway, http, 1.0, prompts)
    shift = [{n: p[n] - w[n] for n in p} for p, w in zip(plain, weighted, strict=True)]
    for row in shift:  # one constant per prompt: the ranking is the same
        assert max(row.values()) - min(row.values()) < 2e-4
    # A sentence of the background set is at least 1/NEAREST close to it (itself).
    assert shift[0]["banking"] > shift[1]["banking"] + 0.05
    assert shift[0]["banking"] >= 1 / NEAREST
