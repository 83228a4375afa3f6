"""Choosing examples to add, on vectors small enough to check by hand."""

from __future__ import annotations

import numpy as np
import pytest

from semproxy.quality.examples import Scoring, choose, score_route

A = np.array([[1.0, 0, 0, 0]])
B = np.array([[0, 1.0, 0, 0]])
# Five prompts meant for A that sit closer to B's example: a sub-topic A's
# examples do not cover. Three prompts for B, routed right. One odd A prompt.
CLUSTER = np.array([[0.1, 0.5, 1.0, 0.02 * i] for i in range(5)])
FOR_B = np.array([[0, 1.0, 0.1, 0.01 * i] for i in range(3)])
ODD = np.array([[0.2, 0.9, 0, 0.4]])
PROMPTS = np.vstack([CLUSTER, FOR_B, ODD, [[0, 0, 0, 1.0]]])
LABELS = np.array([0] * 5 + [1] * 3 + [0, -1])


def test_scores_follow_the_aggregation_by_hand() -> None:
    scores = score_route([A, B], np.array([[3.0, 4.0, 0, 0]]), Scoring("max"))
    assert scores[0].tolist() == pytest.approx([0.6, 0.8])


def test_the_prompt_that_fixes_a_whole_uncovered_sub_topic_comes_first() -> None:
    before = score_route([A, B], PROMPTS, Scoring("max")).argmax(axis=1)
    assert (before[:5] == 1).all() and (before[5:8] == 1).all()  # the cluster is misrouted
    picks = choose([A, B], PROMPTS, LABELS, 3, Scoring("max"))
    first = picks[0]
    assert first.row in range(5) and first.instance == 0
    assert first.gain == 4  # the other four of the cluster; never itself
    assert all(p.row != 9 for p in picks)  # the catchall's prompt is never a candidate
    added = [np.vstack([A, PROMPTS[[p.row for p in picks if p.instance == 0]]]),
             np.vstack([B, PROMPTS[[p.row for p in picks if p.instance == 1]]])]
    after = score_route(added, PROMPTS, Scoring("max")).argmax(axis=1)
    assert (after[:5] == 0).all() and (after[5:8] == 1).all()


def test_blocked_rows_and_full_instances_are_never_picked() -> None:
    picks = choose([A, B], PROMPTS, LABELS, 3, Scoring("max"), blocked={0, 1, 2, 3, 4})
    assert all(p.row not in range(5) for p in picks)
    full = choose([A, B], PROMPTS, LABELS, 3, Scoring("max"), limit=1)
    assert full == []  # both instances already hold their one allowed example
