"""`threshold: auto`: leave-one-out scores and the threshold rule, by hand."""

from __future__ import annotations

import aiohttp
import numpy as np
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.semantic.auto_threshold import background_prompts, learn, leave_one_out
from semproxy.semantic.similarity import instance_scores

from .conftest import ask


def _best_example(prompts: np.ndarray, refs: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    return np.atleast_2d(instance_scores(prompts, refs, bounds))


def test_leave_one_out_scores_each_example_against_its_siblings_only() -> None:
    refs = np.array([[1, 0], [0.6, 0.8], [0, 1], [0, 1]], np.float32)
    bounds = np.array([0, 2, 3, 4])  # a: two examples, b: one, c: one
    own = leave_one_out(refs, bounds, _best_example)
    np.testing.assert_allclose(own[:2], [0.6, 0.6], rtol=1e-6)  # each sees only the other
    assert np.isnan(own[2:]).all()  # a lone example has no sibling to be compared with


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
        instance("banking", examples=["what is my account balance", "transfer money to savings",
                                      "why was my card declined", "report a fraudulent charge",
                                      "when is my credit card bill due"]),
        instance("cooking", examples=["how long do i boil an egg", "give me a lasagna recipe",
                                      "what can i use instead of butter",
                                      "how many calories are in rice",
                                      "suggest a quick vegetarian dinner"], threshold=0.2),
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
