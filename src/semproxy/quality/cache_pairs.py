"""How often the semantic cache layer is right, measured on labelled pairs of prompts.

A pair is a stored prompt and a later one: `same` when they deserve one answer
(a hit is right), not `same` for a hard negative (a hit is a wrong answer).
A pair hits when the cosine of the two prompts' vectors reaches the threshold
and, with the near-miss check on, no near-miss rule tells them apart: what
`ResponseCache.lookup` decides for one candidate. `calibrate` picks the lowest
threshold (the most paraphrase hits) whose wrong-hit rate on the negatives is at
most what the operator names: `semproxy calibrate --cache PAIRS`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semproxy.cache.nearmiss import near_miss
from semproxy.cache.wording import read
from semproxy.quality.rate import Rate


@dataclass(frozen=True, slots=True)
class Pair:
    a: str
    b: str
    same: bool
    category: str = ""


@dataclass(frozen=True, slots=True)
class PairFigures:
    """Paraphrases that hit (want high) and hard negatives that hit (want low)."""

    threshold: float
    paraphrases: Rate
    wrong: Rate


def load_pairs(path: Path) -> list[Pair]:
    """`{"a", "b", "same"[, "category"]}` per line; a malformed line raises ValueError."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            pairs.append(Pair(str(row["a"]), str(row["b"]), bool(row["same"]),
                              str(row.get("category", ""))))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a pair ({exc})") from None
    if not pairs:
        raise ValueError(f"{path}: no pairs")
    return pairs


async def similarities(pairs: Sequence[Pair], model: str) -> np.ndarray:
    """The cosine of each pair's two prompts with the local model `model` (wordllama,
    or `accurate`: the all-MiniLM-L6-v2 the cascade's strong stage runs)."""
    texts = sorted({p.a for p in pairs} | {p.b for p in pairs})
    vectors = await _embed(texts, model)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    row = {t: i for i, t in enumerate(texts)}
    a = vectors[[row[p.a] for p in pairs]]
    b = vectors[[row[p.b] for p in pairs]]
    return np.asarray(np.einsum("ij,ij->i", a, b), dtype=np.float32)


async def _embed(texts: list[str], model: str) -> np.ndarray:
    if model == "accurate":
        from semproxy.embeddings import minilm_onnx

        why = minilm_onnx.missing_requirement()
        if why is not None:
            raise ValueError(f"model accurate: {why}")
        onnx = await asyncio.to_thread(minilm_onnx.load_model)
        return np.asarray(await asyncio.to_thread(onnx.embed, texts), dtype=np.float32)
    if model not in ("wordllama", "fast"):
        raise ValueError(f"unknown model {model!r} (wordllama or accurate)")
    from semproxy.embeddings.local import LocalEmbedder

    return np.asarray(await LocalEmbedder().embed(texts), dtype=np.float32)


def near_misses(pairs: Sequence[Pair]) -> list[str | None]:
    """The near-miss rule that separates each pair, None where none does."""
    return [near_miss(read(p.a), read(p.b)) for p in pairs]


def figures(pairs: Sequence[Pair], sims: np.ndarray, threshold: float,
            refused: Sequence[str | None] | None = None) -> PairFigures:
    hits = sims >= threshold
    if refused is not None:
        hits &= np.array([r is None for r in refused])
    same = np.array([p.same for p in pairs])
    return PairFigures(threshold, Rate(int((hits & same).sum()), int(same.sum())),
                       Rate(int((hits & ~same).sum()), int((~same).sum())))


def calibrate(pairs: Sequence[Pair], sims: np.ndarray, wrong_hits: float,
              refused: Sequence[str | None] | None = None) -> PairFigures:
    """The lowest threshold (rounded up to 0.01) whose wrong-hit share is <= `wrong_hits`."""
    best = figures(pairs, sims, 1.0, refused)
    for threshold in np.arange(1.0, -0.001, -0.01):
        found = figures(pairs, sims, round(float(threshold), 2), refused)
        if (found.wrong.value or 0.0) > wrong_hits:
            break
        best = found
    return best


def run(args: argparse.Namespace) -> int:
    """`semproxy calibrate --cache PAIRS`: print the threshold and its figures."""
    pairs = load_pairs(Path(args.cache))
    target = float(args.wrong_hits)
    if not 0.0 <= target < 1.0:
        raise ValueError("--wrong-hits must be a share between 0 and 1, e.g. 0.01")
    sims = asyncio.run(similarities(pairs, args.model))
    refused = near_misses(pairs)
    for label, checked in (("with the near-miss check", refused), ("cosine alone", None)):
        found = calibrate(pairs, sims, target, checked)
        print(f"{label}: similarity_threshold {found.threshold:.2f}")
        print(f"  paraphrases that hit: {found.paraphrases.text()}")
        print(f"  wrong hits:           {found.wrong.text()}")
    return 0
