import math

import numpy as np
import pytest

from semproxy.semantic.similarity import (
    format_scores,
    instance_scores,
    margin,
    normalize,
    rank,
)


def test_normalize_vector_3_4_gives_0_6_0_8() -> None:
    out = normalize([3.0, 4.0])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [0.6, 0.8], rtol=1e-6)


def test_normalize_rows_independently() -> None:
    out = normalize([[3.0, 4.0], [0.0, 2.0]])
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)


def test_zero_vector_and_zero_row_stay_zero() -> None:
    assert normalize([0.0, 0.0]).tolist() == [0.0, 0.0]
    out = normalize([[0.0, 0.0], [5.0, 0.0]])
    assert out.tolist() == [[0.0, 0.0], [1.0, 0.0]]
    assert not np.isnan(out).any()


def test_orthogonal_scores_zero_and_identical_scores_one() -> None:
    refs = normalize([[1.0, 0.0], [0.0, 1.0]])
    prompt = normalize([1.0, 0.0])
    scores = instance_scores(prompt, refs, [0, 1, 2])
    assert scores.dtype == np.float64
    assert scores.tolist() == pytest.approx([1.0, 0.0])


def test_max_takes_best_example_not_the_mean() -> None:
    # Instance "a" covers two unrelated topics; the prompt matches one exactly.
    refs = normalize([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    prompt = normalize([0.0, 1.0])
    scores = instance_scores(prompt, refs, [0, 2, 3])
    assert scores.tolist() == pytest.approx([1.0, 0.8])


def test_top_k_mean_averages_the_k_best() -> None:
    # Cosines of instance a: 1.0, 0.8, 0.0 -> top-2 mean 0.9; b has one example.
    refs = normalize([[0.0, 1.0], [0.6, 0.8], [1.0, 0.0], [0.8, 0.6]])
    prompt = normalize([0.0, 1.0])
    scores = instance_scores(prompt, refs, [0, 3, 4], aggregation="top_k_mean", k=2)
    assert scores.tolist() == pytest.approx([0.9, 0.6])


def test_top_k_mean_caps_k_at_example_count() -> None:
    refs = normalize([[0.0, 1.0], [0.6, 0.8]])
    prompt = normalize([0.0, 1.0])
    scores = instance_scores(prompt, refs, [0, 2], aggregation="top_k_mean", k=5)
    assert scores.tolist() == pytest.approx([0.9])


@pytest.mark.parametrize("aggregation", ["max", "top_k_mean"])
def test_instance_without_examples_scores_minus_inf(aggregation: str) -> None:
    # Instances: a owns row 0, b owns nothing, c owns row 1, d owns nothing (at the end).
    refs = normalize([[1.0, 0.0], [0.0, 1.0]])
    prompt = normalize([0.0, 1.0])
    scores = instance_scores(prompt, refs, [0, 1, 1, 2, 2], aggregation=aggregation)
    assert scores[0] == pytest.approx(0.0)
    assert scores[1] == -math.inf
    assert scores[2] == pytest.approx(1.0)
    assert scores[3] == -math.inf


def test_all_instances_empty_score_minus_inf() -> None:
    refs = np.zeros((0, 2), dtype=np.float32)
    scores = instance_scores(normalize([1.0, 0.0]), refs, [0, 0, 0])
    assert scores.tolist() == [-math.inf, -math.inf]


def test_unknown_aggregation_and_bad_bounds_are_rejected() -> None:
    refs = normalize([[1.0, 0.0]])
    with pytest.raises(ValueError, match="aggregation"):
        instance_scores(normalize([1.0, 0.0]), refs, [0, 1], aggregation="mean")
    with pytest.raises(ValueError, match="bounds"):
        instance_scores(normalize([1.0, 0.0]), refs, [0, 2])


def test_rank_sorts_desc_and_drops_non_finite() -> None:
    cleared, ranking = rank(["a", "b", "c"], np.array([0.2, -np.inf, 0.9]), [0.0, 0.0, 0.0])
    assert ranking == [("c", pytest.approx(0.9)), ("a", pytest.approx(0.2))]
    assert [name for name, _ in cleared] == ["c", "a"]


def test_rank_ties_keep_config_order() -> None:
    _, ranking = rank(["x", "y", "z"], np.array([0.5, 0.7, 0.5]), [0.0, 0.0, 0.0])
    assert [name for name, _ in ranking] == ["y", "x", "z"]


def test_rank_applies_each_instances_own_threshold() -> None:
    # "code" scores higher but demands 0.9; "chat" clears its 0.5 bar.
    cleared, ranking = rank(["code", "chat", "math"], np.array([0.8, 0.6, 0.4]), [0.9, 0.5, 0.4])
    assert [name for name, _ in ranking] == ["code", "chat", "math"]
    assert [name for name, _ in cleared] == ["chat", "math"]


def test_rank_threshold_is_inclusive() -> None:
    cleared, _ = rank(["a"], np.array([0.5]), [0.5])
    assert cleared == [("a", 0.5)]


def test_format_scores_exact_string() -> None:
    assert format_scores([("code", 0.82134), ("translate", 0.19036)]) == (
        "code:0.8213,translate:0.1904"
    )
    assert format_scores([]) == ""


def test_margin_is_winner_minus_runner_up() -> None:
    assert margin([("a", 0.75), ("b", 0.5), ("c", 0.1)]) == pytest.approx(0.25)
    assert margin([("a", 0.75)]) == math.inf
    assert margin([]) == math.inf


def test_max_centroid_averages_best_example_and_centroid() -> None:
    # a: examples [1, 0] and [0, 1]; the prompt is [1, 0]: best 1.0, centroid
    # [0.707, 0.707] at cosine 0.707 -> 0.854. b: one example, both parts 0.6.
    refs = normalize([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    scores = instance_scores(normalize([1.0, 0.0]), refs, [0, 2, 3], aggregation="max_centroid")
    assert scores.tolist() == pytest.approx([0.5 + 0.5 * math.sqrt(0.5), 0.6])


def test_max_centroid_of_cancelling_examples_keeps_the_best_half() -> None:
    refs = normalize([[1.0, 0.0], [-1.0, 0.0]])
    scores = instance_scores(normalize([1.0, 0.0]), refs, [0, 2], aggregation="max_centroid")
    assert scores.tolist() == pytest.approx([0.5])


@pytest.mark.parametrize("aggregation", ["max", "top_k_mean", "max_centroid",
                                         "max_local_centroid"])
def test_a_batch_scores_each_prompt_like_one_at_a_time(aggregation: str) -> None:
    rng = np.random.default_rng(0)
    refs = normalize(rng.normal(size=(9, 4)))
    prompts = normalize(rng.normal(size=(5, 4)))
    bounds = [0, 3, 3, 7, 9]
    batch = instance_scores(prompts, refs, bounds, aggregation=aggregation, k=2)
    assert batch.shape == (5, 4)
    for row, prompt in zip(batch, prompts, strict=True):
        single = instance_scores(prompt, refs, bounds, aggregation=aggregation, k=2)
        np.testing.assert_allclose(row, single, rtol=1e-6, atol=1e-6)


def test_max_local_centroid_is_thirds_of_best_centroid_and_nearest_k() -> None:
    # One instance, examples [1,0], [0.6,0.8], [0,1], [-1,0]; prompt [1,0]; k=2.
    # best 1.0; centroid of all: sum [0.6,1.8], cosine 0.6/sqrt(3.6);
    # nearest two are [1,0] and [0.6,0.8]: sum [1.6,0.8], cosine 1.6/sqrt(3.2).
    refs = normalize([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]])
    scores = instance_scores(normalize([1.0, 0.0]), refs, [0, 4],
                             aggregation="max_local_centroid", k=2)
    expected = (1.0 + 0.6 / math.sqrt(3.6) + 1.6 / math.sqrt(3.2)) / 3
    assert scores.tolist() == pytest.approx([expected])


def test_max_local_centroid_with_k_over_the_example_count_uses_them_all() -> None:
    # b has one example: best, centroid and local centroid are all its cosine 0.6.
    refs = normalize([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    scores = instance_scores(normalize([1.0, 0.0]), refs, [0, 2, 3],
                             aggregation="max_local_centroid", k=5)
    # a: best 1, centroid = local centroid (both examples) = sqrt(0.5).
    assert scores.tolist() == pytest.approx([(1 + 2 * math.sqrt(0.5)) / 3, 0.6])


def test_max_local_centroid_picks_each_instances_own_nearest() -> None:
    # Instances are ranked within themselves, never across: "b" keeps its
    # own best pair although "a" holds the globally nearest examples.
    refs = normalize([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.2, 1.0], [1.0, 1.0]])
    prompt = normalize([1.0, 0.0])
    scores = instance_scores(prompt, refs, [0, 2, 5], aggregation="max_local_centroid", k=2)
    b = refs[2:5]
    sims = b @ prompt
    top2 = b[np.argsort(-sims)[:2]].sum(axis=0)
    local = float(top2 @ prompt / np.linalg.norm(top2))
    centroid = float(b.sum(axis=0) @ prompt / np.linalg.norm(b.sum(axis=0)))
    assert scores[1] == pytest.approx((sims.max() + centroid + local) / 3)


def test_max_local_centroid_batches_in_chunks_like_one_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from semproxy.semantic import similarity
    monkeypatch.setattr(similarity, "_GATHER_LIMIT", 1)  # one prompt row per chunk
    rng = np.random.default_rng(1)
    refs = normalize(rng.normal(size=(12, 4)))
    prompts = normalize(rng.normal(size=(7, 4)))
    bounds = [0, 5, 5, 9, 12]
    chunked = instance_scores(prompts, refs, bounds, aggregation="max_local_centroid", k=3)
    monkeypatch.setattr(similarity, "_GATHER_LIMIT", 1 << 22)
    whole = instance_scores(prompts, refs, bounds, aggregation="max_local_centroid", k=3)
    np.testing.assert_allclose(chunked, whole, rtol=1e-6, atol=1e-6)
    assert np.isneginf(whole[:, 1]).all()
