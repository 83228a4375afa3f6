"""LocalEmbedder: the real wordllama model, loaded from the wheel, no network."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from semproxy.embeddings import Embedder
from semproxy.embeddings.local import MODEL_DIM, LocalEmbedder, is_small_batch, load_model

SRC = str(Path(__file__).resolve().parents[2] / "src")


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture
async def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_local_embedder_meets_the_protocol() -> None:
    checked: Embedder = LocalEmbedder()
    assert checked.fingerprint == "local:wordllama-l2_supercat-256"


async def test_same_text_gives_the_same_vector(embedder: LocalEmbedder) -> None:
    first = await embedder.embed(["route me to the coding model"])
    second = await embedder.embed(["route me to the coding model"])
    np.testing.assert_array_equal(first, second)


async def test_similar_requests_are_closer_than_unrelated_ones(embedder: LocalEmbedder) -> None:
    a, b, c = await embedder.embed(
        [
            "write a python function",
            "implement a function in python",
            "translate this sentence to french",
        ]
    )
    assert cosine(a, b) > cosine(a, c) + 0.1


async def test_batch_has_one_float32_row_per_text(embedder: LocalEmbedder) -> None:
    vectors = await embedder.embed(["one", "two", "three"])
    assert vectors.shape == (3, MODEL_DIM)
    assert vectors.dtype == np.float32


async def test_large_batch_in_a_thread_matches_inline_rows(embedder: LocalEmbedder) -> None:
    texts = [f"prompt number {i} about databases" for i in range(100)]
    assert not is_small_batch(texts)
    large = await embedder.embed(texts)
    assert large.shape == (100, MODEL_DIM)
    np.testing.assert_allclose(large[7], (await embedder.embed([texts[7]]))[0], rtol=1e-5)


async def test_small_batch_rows_match_the_model_and_one_text_calls(
        embedder: LocalEmbedder) -> None:
    # The inline batch path sums each text's cached token rows in one segmented
    # pass instead of calling the model's padded batch; the rows must not change.
    texts = ["explain a kubernetes crashloop step by step 4711", "hi", "  double  spaced  ",
             "the the the the", "v2.10.3 release notes", "", "ünïcödé prompt ☃"]
    assert is_small_batch(texts)
    batch = await embedder.embed(texts)
    model = load_model()
    kept = [t for t in texts if t.strip()]
    np.testing.assert_allclose(batch[[i for i, t in enumerate(texts) if t.strip()]],
                               model.embed(kept), rtol=1e-5, atol=1e-7)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(batch[i], (await embedder.embed([text]))[0],
                                   rtol=1e-5, atol=1e-7)
    assert not batch[5].any()


async def test_blank_texts_embed_to_finite_zero_vectors(embedder: LocalEmbedder) -> None:
    vectors = await embedder.embed(["", "   ", "\n\t", "hello"])
    assert np.isfinite(vectors).all()
    assert not vectors[:3].any()
    assert vectors[3].any()


async def test_empty_batch_gives_an_empty_matrix(embedder: LocalEmbedder) -> None:
    vectors = await embedder.embed([])
    assert vectors.shape == (0, MODEL_DIM)


def test_small_batch_rule_counts_texts_and_characters() -> None:
    assert is_small_batch(["short prompt"] * 32)
    assert not is_small_batch(["x"] * 33)
    assert not is_small_batch(["x" * 2000])


def run_isolated(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter, so wordllama is imported for the first time."""
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_loading_the_model_leaves_root_logging_alone() -> None:
    result = run_isolated(
        """
        import logging
        root = logging.getLogger()
        before = (list(root.handlers), root.level)
        from semproxy.embeddings.local import load_model
        load_model()
        assert (list(root.handlers), root.level) == before, (root.handlers, root.level)
        import wordllama  # already imported: basicConfig must not have run again
        assert "wordllama" in __import__("sys").modules
        """
    )
    assert result.returncode == 0, result.stderr


def test_model_loads_and_embeds_without_network(tmp_path: Path) -> None:
    # Every way out is refused, and HOME points to an empty folder, so any
    # attempt to read ~/.cache/wordllama or download fails loudly.
    result = run_isolated(
        f"""
        import os, socket
        os.environ["HOME"] = {str(tmp_path)!r}
        def refuse(*args, **kwargs):
            raise OSError("network is disabled in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        import asyncio
        from semproxy.embeddings.local import LocalEmbedder
        vectors = asyncio.run(LocalEmbedder().embed(["hello offline world"]))
        assert vectors.shape == (1, 256) and vectors.any()
        """
    )
    assert result.returncode == 0, result.stderr
    assert not any(tmp_path.iterdir()), "the loader wrote to the home folder"
