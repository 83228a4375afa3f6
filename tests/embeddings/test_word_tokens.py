"""Per-word token ids equal the tokenizer's on the whole text, numbers included."""

from __future__ import annotations

import random
import string
import tracemalloc
from typing import Any

import pytest

from semproxy.embeddings.local import WordTokens, digit_ids, entry_bytes, load_model

WORDS = ["explain", "the", "rust", "borrow", "error", "for", "a", "beginner", "(ref", "café",
         "naïve", "GPU", "k8s", "x86_64", "v1.2.3", "$5", "1,000", "3rd", "2026-11-30",
         "10x", "٣", "①", "½", "C++", "e.g.", "don't", "日本語", "🙂", "12:30pm", "#42", "0.5%"]


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_model().tokenizer


def reference(tokenizer: Any, text: str) -> list[int]:
    ids: list[int] = tokenizer.encode(text, add_special_tokens=False).ids
    return ids


def test_digits_never_merge_in_the_shipped_tokenizer(tokenizer: Any) -> None:
    found = digit_ids(tokenizer)
    assert found is not None  # without it every fresh number costs a tokenizer call
    start, digits = found
    assert reference(tokenizer, "7") == [start, digits["7"]]


def test_word_ids_match_the_tokenizer_on_numbers_and_mixed_words(tokenizer: Any) -> None:
    rng = random.Random(7)
    tokens = WordTokens(tokenizer)
    texts = [f"explain a kubernetes crashloop for a beginner (ref {n})"
             for n in rng.sample(range(10**9), 300)]
    for _ in range(1500):
        words = []
        for _ in range(rng.randint(1, 8)):
            word = rng.choice(WORDS)
            if rng.random() < 0.5:  # glue a fresh number in front, behind or inside
                number = str(rng.randint(0, 10**rng.randint(1, 9)))
                word = rng.choice([number + word, word + number,
                                   word[:1] + number + word[1:], number])
            words.append(word)
        texts.append(" ".join(words))
    for text in texts:
        assert tokens.ids(text) == reference(tokenizer, text), text
    assert not any(c in "0123456789" for c in "".join(tokens._words))  # numbers are not cached


def test_without_the_digit_rule_words_are_still_exact(tokenizer: Any) -> None:
    tokens = WordTokens(tokenizer)
    tokens._digits = None  # a tokenizer whose merges join digits takes the plain path
    for text in ["build 2026 release", "x86_64 v1.2.3", "pay $5 (ref 123456789)"]:
        assert tokens.ids(text) == reference(tokenizer, text)


def _flood(tokens: WordTokens, texts: list[str]) -> int:
    """Python memory still held after tokenizing `texts` (tracemalloc, bytes)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for text in texts:
            tokens.ids(text)
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_flood_of_unique_long_words_leaves_the_cache_empty(tokenizer: Any) -> None:
    # 1,000 characters without a space, new every time (what a probe sends): each
    # was kept, about 11 KB apiece; 65,536 of them held 1.7 GB per worker.
    rng = random.Random(3)
    tokens = WordTokens(tokenizer)
    texts = ["".join(rng.choices(string.ascii_lowercase, k=1000)) for _ in range(800)]
    texts += ["".join(rng.choices("😀🎉🔥👍🚀🙂", k=1000)) for _ in range(100)]
    assert _flood(tokens, texts) < 2 << 20
    assert tokens.cached_bytes == 0


def test_the_word_cache_never_holds_more_than_its_bound_in_bytes(tokenizer: Any) -> None:
    rng = random.Random(4)
    bound = 256 << 10
    tokens = WordTokens(tokenizer, max_bytes=bound)
    texts = [" ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 12)))
                      for _ in range(100)) for _ in range(200)]  # 20,000 new words
    held = _flood(tokens, texts)
    assert 0 < tokens.cached_bytes <= bound
    assert held < 2 * bound  # the count is honest: memory follows it
    counted = sum(entry_bytes(k, v) for cache in (tokens._words, tokens._pieces)
                  for k, v in cache.items())
    assert counted == tokens.cached_bytes
