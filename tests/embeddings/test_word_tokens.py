"""Per-word token ids equal the tokenizer's on the whole text, numbers included."""

from __future__ import annotations

import random
from typing import Any

import pytest

from semproxy.embeddings.local import WordTokens, digit_ids, load_model

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
