"""In-process embeddings with the `wordllama` package, whose weights ship in its wheel.

This is the default embedder: no key, no network, and a typical prompt embeds
in tens of microseconds. The model is loaded once per process by `load_model`.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import itertools
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import numpy as np
import orjson

from semproxy.embeddings import Vectors
from semproxy.errors import EmbeddingError

MODEL_CONFIG = "l2_supercat"
MODEL_DIM = 256

# When to embed on the event loop and when in a worker thread. Measured on the
# dev box (CPython 3.11, wordllama 0.3, one core):
#   1 prompt of ~70 chars ......... ~24-29 us      asyncio.to_thread hop alone ... ~50 us
#   8 prompts ..................... ~130 us        to_thread + 1 prompt ......... ~110 us
#   32 prompts .................... ~330 us        1 text of 1,000 chars ........ ~200 us
#   256 prompts ................... ~2.4 ms        1 text of 16,000 chars ....... ~3.4 ms
# Cost is roughly 20 us + 0.2 us per character. (Those batch figures are the
# model's own padded batch call; inline batches now go through `embed_many`:
# 8 prompts ~76 us against ~195 us, the same rows.) Below ~1 KiB the thread hop
# costs more than the work it would move off the loop, so small batches run
# inline; anything bigger would stall every other request for longer than a
# hop, so it goes to a thread.
INLINE_MAX_TEXTS = 32
INLINE_MAX_CHARS = 1024

# The per-word token cache (`WordTokens`) is bounded by what it holds in bytes,
# not by its count of entries: 65,536 entries of 1,000-character "words" (no
# spaces: hashes, base64, emoji) held 1.7 GB. Such a word is never seen twice,
# so words longer than MAX_CACHED_CHARS are tokenized each time and not kept;
# English words are far shorter. MAX_CACHE_BYTES holds about 40,000 words.
MAX_CACHE_BYTES = 8 << 20
MAX_CACHED_CHARS = 48
# What one entry costs beyond its key and id list: its slot in the dict's tables
# (about 100 bytes at CPython 3.11's load factor) and each id's int object.
_SLOT_BYTES = 104
_INT_BYTES = 28


@functools.cache
def _import_wordllama() -> ModuleType:
    """Import wordllama without letting it reconfigure our logging.

    `wordllama/__init__.py` calls `logging.basicConfig(level=INFO)`, which adds
    a stderr handler to the root logger and lowers its level; that would
    duplicate and reformat every log line of the gateway. We snapshot the root
    logger, import, and undo whatever the import added.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        module = importlib.import_module("wordllama")
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
    return module


@functools.cache
def load_model() -> Any:
    """Load the wordllama model once per process (blocking; ~150 ms).

    `functools.cache` is the process-wide cache: no mutable global, and a failed
    load raises and is not cached, so the next call tries again.
    """
    wordllama: Any = _import_wordllama()
    # By default WordLlama looks for the tokenizer config in ~/.cache/wordllama
    # and downloads from Hugging Face when it is missing, although the wheel
    # already holds both files under the package folder. Pointing cache_dir at
    # the package folder finds them there, and disable_download guarantees we
    # never reach for the network (the gateway may run air-gapped).
    model = wordllama.WordLlama.load(
        config=MODEL_CONFIG,
        dim=MODEL_DIM,
        cache_dir=Path(wordllama.__file__).parent,
        disable_download=True,
    )
    # Checked once here, so that a text's vector (a mean of table rows) is finite
    # by construction and one prompt per request needs no check of its own.
    if not np.isfinite(model.embedding).all():
        raise ValueError("the wordllama embedding table holds non-finite values")
    return model


def embed_with(model: Any, texts: Sequence[str], tokens: WordTokens | None = None) -> Vectors:
    """Embed `texts` with a loaded model (blocking); float32 (len(texts), MODEL_DIM).

    Blank (empty or whitespace-only) texts map to the zero vector. wordllama
    gives "" the zero vector but "   " a non-zero one made of whitespace
    tokens; neither carries meaning, so we make both the same, deterministic,
    finite answer. A zero vector scores 0 against everything once
    normalisation guards a zero norm. Any other non-finite row is an error.
    One text (a request's prompt) skips the batch arrays: its mean of table rows
    is finite because `load_model` checked the table.
    """
    if len(texts) == 1 and texts[0].strip():
        return embed_one(model, texts[0], tokens)[None, :]
    out = np.zeros((len(texts), MODEL_DIM), dtype=np.float32)
    keep = [i for i, text in enumerate(texts) if text.strip()]
    if len(keep) == 1:
        out[keep[0]] = embed_one(model, texts[keep[0]], tokens)
    elif keep and tokens is not None:
        out[keep] = embed_many(model, [texts[i] for i in keep], tokens)
    elif keep:
        out[keep] = model.embed([texts[i] for i in keep])
    if not np.isfinite(out).all():
        raise EmbeddingError("local embedding produced a non-finite vector")
    return out


_DIGIT = re.compile(r"([0-9])")
_DIGITS = re.compile(r"([0-9]+)")
_chain = itertools.chain.from_iterable


def digit_ids(tokenizer: Any) -> tuple[int, dict[str, int]] | None:
    """The id of a lone word start and of each ASCII digit, when digits never merge.

    With no merge rule touching a digit, BPE cannot join a digit to anything, so
    every digit splits a word into pieces that tokenize independently. Checked
    on the tokenizer's own merge list; None (no shortcut) when the check fails.
    """
    try:
        model = orjson.loads(tokenizer.to_str())["model"]
        merges = model["merges"]
    except (KeyError, TypeError, ValueError):
        return None
    for merge in merges:
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if any(_DIGIT.search(part) for part in pair):
            return None
    starts, digits = set(), {}
    for digit in "0123456789":
        ids = tokenizer.encode(digit, add_special_tokens=False).ids
        if len(ids) != 2:
            return None
        starts.add(ids[0])
        digits[digit] = ids[1]
    return (starts.pop(), digits) if len(starts) == 1 else None


class WordTokens:
    """Token ids of a text, built from cached per-word ids where that is exact.

    The model's tokenizer has no pre-tokenizer: it turns every space into "▁"
    and runs BPE over the whole string. No vocabulary entry has "▁" inside it
    except pure runs of "▁", so no merge can cross a single space and a text
    with single spaces tokenizes as the concatenation of its words, each
    encoded alone. Double, leading or trailing spaces form such runs, so those
    texts go to the tokenizer whole. Checked on 25,009 CLINC150 and BANKING77
    prompts: identical ids. A per-request prompt then costs a few dict lookups
    instead of a tokenizer call (measured: 12.4 -> 4.5 us for 70 characters).

    Words with digits (numbers, dates, versions, ids) are mostly new every
    time, so they are not cached whole: digits never merge with anything (see
    `digit_ids`), so such a word is its leading piece, then each digit and the
    piece after it, and only the pieces are cached. A tokenizer call costs
    more than the rest of the embedding when the prompt ends in a fresh number.
    """

    def __init__(self, tokenizer: Any, max_bytes: int = MAX_CACHE_BYTES) -> None:
        self._tokenizer = tokenizer
        self._words: dict[str, list[int]] = {}
        self._pieces: dict[str, list[int]] = {}
        self._max_bytes = max_bytes
        self.cached_bytes = 0  # what both caches hold, as `entry_bytes` counts it
        self._digits = digit_ids(tokenizer)

    def _encode(self, text: str) -> list[int]:
        ids: list[int] = self._tokenizer.encode(text, add_special_tokens=False).ids
        return ids

    def _cached(self, cache: dict[str, list[int]], key: str, text: str) -> list[int]:
        found = cache.get(key)
        if found is None:
            found = self._encode(text)
            if len(key) <= MAX_CACHED_CHARS:
                self._keep(cache, key, found)
        return found

    def _keep(self, cache: dict[str, list[int]], key: str, ids: list[int]) -> None:
        size = entry_bytes(key, ids)
        if self.cached_bytes + size > self._max_bytes:
            # Crude, and enough: the common words come back at once. `clear`
            # frees the entries and the dict's table too.
            self._words.clear()
            self._pieces.clear()
            self.cached_bytes = 0
        cache[key] = ids
        self.cached_bytes += size

    def _numbered(self, word: str) -> list[int]:
        assert self._digits is not None
        start, digits = self._digits
        parts = _DIGITS.split(word)  # text, digits, text, digits, ..., text
        out = list(self._cached(self._words, parts[0], parts[0])) if parts[0] else [start]
        pieces = self._pieces
        for i in range(1, len(parts), 2):
            out += map(digits.__getitem__, parts[i])  # each digit is a token of its own
            if parts[i + 1]:
                # A piece after a digit carries no word start: encode it behind a
                # digit and drop the start and that digit.
                out += self._cached(pieces, parts[i + 1], "0" + parts[i + 1])[2:]
        return out

    def ids(self, text: str) -> list[int]:
        if "  " in text or text[:1] == " " or text[-1:] == " ":
            return self._encode(text)
        words = self._words
        parts = text.split(" ")
        # Every word looked up in one pass, and their ids joined in another (no Python
        # loop when all are cached); the words not cached are filled in between.
        found: list[list[int] | None] = list(map(words.get, parts))
        if None in found:
            numbered = self._digits is not None
            for i, cached in enumerate(found):
                if cached is None:
                    word = parts[i]
                    found[i] = self._numbered(word) if numbered and _DIGIT.search(word) \
                        else self._cached(words, word, word)
        return list(_chain(cast("list[list[int]]", found)))  # no None is left


def entry_bytes(key: str, ids: list[int]) -> int:
    """What one cache entry holds in memory: key, id list, ids, dict slot."""
    return sys.getsizeof(key) + sys.getsizeof(ids) + len(ids) * _INT_BYTES + _SLOT_BYTES


_sum = np.add.reduce  # looked up once: every new prompt of a request passes here
_F32 = np.float32


def embed_one(model: Any, text: str, tokens: WordTokens | None = None) -> Vectors:
    """One text, the way `model.embed` does it (mean of its token vectors), minus the
    batching machinery: `encode` of a single text skips the padded batch arrays,
    which halves the cost of the per-request case (measured: 69 -> 32 us for a
    70-character prompt; the same vector to the last bit).
    """
    ids = tokens.ids(text) if tokens is not None else \
        model.tokenizer.encode(text, add_special_tokens=False).ids
    if not ids:
        return np.zeros(MODEL_DIM, dtype=np.float32)
    # ndarray.mean is this sum and division behind a Python-level wrapper. `take` gathers
    # the rows as `table[ids]` does, for less, and its "clip" clamps ids past the table
    # to the last row, as wordllama does (token ids are never negative).
    total: Vectors = _sum(model.embedding.take(ids, 0, None, "clip"), 0, _F32)
    return total / _F32(len(ids))


def embed_many(model: Any, texts: Sequence[str], tokens: WordTokens) -> Vectors:
    """Several texts as `embed_one` does each, with one gather and one segmented sum.

    `model.embed` tokenizes the batch afresh, pads every text to the longest and
    pools through masks: for 8 prompts of ~60 characters it cost ~1.5 ms, more
    than 8 calls of `embed_one`. Here each text's ids come from the word cache,
    all ids go into one array, and `np.add.reduceat` sums each text's rows in
    one pass, so the cost is the tokens, not the batch's widest row. Every text
    must yield at least one token (callers drop blank texts).
    """
    table = model.embedding
    ids = [tokens.ids(text) for text in texts]
    counts = np.fromiter(map(len, ids), dtype=np.intp, count=len(ids))
    if not counts.all():  # a text with no token: the one-text path gives it zeros
        return np.stack([embed_one(model, text, tokens) for text in texts])
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.intp,
                       count=int(counts.sum()))
    np.minimum(flat, table.shape[0] - 1, out=flat)  # wordllama clamps ids past its table
    starts = np.zeros(len(ids), dtype=np.intp)
    np.cumsum(counts[:-1], out=starts[1:])
    sums: Vectors = np.add.reduceat(table[flat], starts, axis=0, dtype=np.float32)
    return sums / counts.astype(np.float32)[:, None]


def is_small_batch(texts: Sequence[str]) -> bool:
    """True when embedding `texts` is cheaper than a hop to a worker thread."""
    return len(texts) <= INLINE_MAX_TEXTS and sum(map(len, texts)) <= INLINE_MAX_CHARS


class LocalEmbedder:
    """The `Embedder` backed by wordllama, running in this process."""

    fingerprint = f"local:wordllama-{MODEL_CONFIG}-{MODEL_DIM}"

    def __init__(self) -> None:
        self._model: Any = None
        self._tokens: WordTokens | None = None

    async def warm(self) -> None:
        """Load the model in a worker thread, so startup never blocks the loop.

        Two concurrent first calls may both load (functools.cache does not
        lock); the second result is discarded, which is cheaper than a lock.
        """
        if self._model is None:
            try:
                model = await asyncio.to_thread(load_model)
                self._tokens = await asyncio.to_thread(WordTokens, model.tokenizer)
                self._model = model
            except Exception as exc:  # any load failure (missing file, bad weights)
                raise EmbeddingError(f"cannot load the wordllama model: {exc}") from exc

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed inline for small batches, in a worker thread for large ones."""
        if self._model is None:
            await self.warm()
        batch = list(texts)
        try:
            if is_small_batch(batch):
                return embed_with(self._model, batch, self._tokens)
            return await asyncio.to_thread(embed_with, self._model, batch)
        except EmbeddingError:
            raise
        except Exception as exc:  # the fail-open path: whatever wordllama raises
            raise EmbeddingError(f"local embedding failed: {exc}") from exc

    async def aclose(self) -> None:
        """Nothing to release: the model is shared by the whole process."""
