"""The numpy BERT pieces, checked by hand and on a tiny random model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from semproxy.embeddings.bert import (
    BertWeights,
    encode,
    erf,
    gelu,
    l2_normalize,
    layer_norm,
    mean_pool,
    softmax,
)


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def test_erf_matches_the_exact_function_to_float32_precision() -> None:
    grid = np.linspace(-6, 6, 2401, dtype=np.float32)
    exact = np.array([math.erf(x) for x in grid.astype(np.float64)])
    # 1.5e-7 from the approximation, the rest float32 rounding
    assert np.abs(erf(grid) - exact).max() < 5e-7
    np.testing.assert_array_equal(erf(f32(0.0, 10.0, -10.0)), f32(0.0, 1.0, -1.0))


def test_gelu_is_zero_at_zero_identity_far_right_and_zero_far_left() -> None:
    np.testing.assert_allclose(gelu(f32(0.0, 10.0, -10.0)), f32(0.0, 10.0, 0.0), atol=1e-6)
    # GELU(1) = 1 * Phi(1) = 0.841345 (the erf form; the tanh form gives 0.841192)
    assert gelu(f32(1.0))[0] == pytest.approx(0.841345, abs=1e-6)


def test_layer_norm_centres_and_scales_the_last_axis() -> None:
    out = layer_norm(f32(1.0, 2.0, 3.0), f32(1, 1, 1), f32(0, 0, 0), 1e-12)
    # mean 2, biased variance 2/3: (x - 2) / sqrt(2/3)
    np.testing.assert_allclose(out, f32(-1.224745, 0.0, 1.224745), atol=1e-5)
    scaled = layer_norm(f32(1.0, 3.0), f32(2, 2), f32(5, 5), 1e-12)
    np.testing.assert_allclose(scaled, f32(3.0, 7.0), atol=1e-5)


def test_softmax_of_zero_and_log3_is_a_quarter_and_three_quarters() -> None:
    np.testing.assert_allclose(softmax(f32(0.0, math.log(3))), f32(0.25, 0.75), atol=1e-6)
    np.testing.assert_allclose(softmax(f32(1000.0, 1000.0)), f32(0.5, 0.5))  # no overflow


def test_mean_pool_ignores_masked_tokens() -> None:
    hidden = np.array([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[True, True, False]])
    np.testing.assert_allclose(mean_pool(hidden, mask), [[2.0, 3.0]])


def test_l2_normalize_gives_unit_rows_and_keeps_zero_rows_zero() -> None:
    np.testing.assert_allclose(l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)),
                               [[0.6, 0.8], [0.0, 0.0]])


def tiny_model(hidden: int = 8, heads: int = 2, layers: int = 2, ff: int = 16) -> BertWeights:
    rng = np.random.default_rng(0)

    def r(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, shape).astype(np.float32)

    t = {"embeddings.word_embeddings.weight": r(20, hidden),
         "embeddings.position_embeddings.weight": r(10, hidden),
         "embeddings.token_type_embeddings.weight": r(2, hidden),
         "embeddings.LayerNorm.weight": 1 + r(hidden), "embeddings.LayerNorm.bias": r(hidden)}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            t[f"{p}attention.self.{n}.weight"], t[f"{p}attention.self.{n}.bias"] = \
                r(hidden, hidden), r(hidden)
        t[p + "attention.output.dense.weight"] = r(hidden, hidden)
        t[p + "attention.output.dense.bias"] = r(hidden)
        t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"] = r(ff, hidden), r(ff)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = r(hidden, ff), r(hidden)
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[f"{p}{n}.weight"], t[f"{p}{n}.bias"] = 1 + r(hidden), r(hidden)
    return BertWeights.from_tensors(t, layers, heads, 1e-12)


def test_padding_does_not_change_the_real_tokens() -> None:
    w = tiny_model()
    alone = encode(w, np.array([[1, 5, 2]]), np.array([[True, True, True]]))
    padded = encode(w, np.array([[1, 5, 2, 0, 0], [1, 7, 8, 9, 2]]),
                    np.array([[True, True, True, False, False], [True] * 5]))
    assert padded.shape == (2, 5, 8)
    np.testing.assert_allclose(padded[0, :3], alone[0], atol=1e-5)


def test_a_missing_tensor_is_a_key_error_and_odd_heads_a_value_error() -> None:
    with pytest.raises(ValueError, match="multiple of 3 heads"):
        BertWeights.from_tensors(
            {"embeddings.word_embeddings.weight": np.zeros((4, 8), np.float32)}, 1, 3, 1e-12)
    with pytest.raises(KeyError):
        BertWeights.from_tensors(
            {"embeddings.word_embeddings.weight": np.zeros((4, 8), np.float32)}, 1, 2, 1e-12)


def test_more_tokens_than_positions_is_refused() -> None:
    with pytest.raises(ValueError, match="positions"):
        encode(tiny_model(), np.zeros((1, 11), np.int64), np.ones((1, 11), np.bool_))
