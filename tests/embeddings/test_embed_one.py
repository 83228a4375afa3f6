"""`embed_one`, a request's prompt: the mean of its token rows as wordllama takes it, to
the last bit, with ids past the table clamped to its last row as wordllama does."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from semproxy.embeddings.local import WordTokens, embed_one, load_model

PROMPTS = [f"{verb} {topic} {style} (ref {n})" for n, (verb, topic, style) in enumerate(
    (v, t, s) for v in ("explain", "debug", "translate", "summarize")
    for t in ("a recursive sql query", "the french revolution", "quantum entanglement",
              "v1.2.3 release notes", "12:30pm on 2026-11-30", "café naïve 日本語 🙂")
    for s in ("for a beginner", "step by step", "in plain english 4711"))]


@pytest.fixture(scope="module")
def model() -> Any:
    return load_model()


def mean_of_rows(table: np.ndarray, ids: list[int]) -> np.ndarray:
    """What wordllama's pooling gives one text: its rows (clamped ids) summed in
    float32, divided by their count."""
    clamped = [min(i, table.shape[0] - 1) for i in ids]
    total: np.ndarray = np.add.reduce(table[clamped], axis=0, dtype=np.float32)
    return total / np.float32(len(clamped))


def test_one_prompt_is_the_mean_of_its_rows_to_the_last_bit(model: Any) -> None:
    tokens = WordTokens(model.tokenizer)
    rng = random.Random(3)
    texts = PROMPTS + [f"{p} {rng.randrange(10**9)}" for p in PROMPTS]
    for text in texts:
        ids = model.tokenizer.encode(text, add_special_tokens=False).ids
        expected = mean_of_rows(model.embedding, ids)
        for got in (embed_one(model, text, tokens), embed_one(model, text)):
            assert got.dtype == np.float32 and got.shape == expected.shape
            assert got.tobytes() == expected.tobytes(), text


def test_ids_past_the_table_take_its_last_row(model: Any) -> None:
    small = SimpleNamespace(tokenizer=model.tokenizer, embedding=model.embedding[:300])
    text = "explain the french revolution for a beginner"
    ids = model.tokenizer.encode(text, add_special_tokens=False).ids
    assert max(ids) >= 300 > min(ids)  # some ids in the table, some past it
    got = embed_one(small, text, WordTokens(model.tokenizer))
    assert got.tobytes() == mean_of_rows(small.embedding, ids).tobytes()
    assert np.isfinite(got).all()
