"""How often the semantic cache layer is right, measured on labelled pairs of prompts.

A pair is a stored prompt and a later one: `same` when they deserve one answer
(a hit is right), not `same` for a hard negative (a hit is a wrong answer).
A pair hits when `cache.hitrule.judge` says so for the cosine of the two prompts'
vectors: no near miss, and the cosine reaches `same_words` for two wordings of the
same words or the rewording `threshold` otherwise (what `ResponseCache.lookup`
decides for one candidate). `calibrate` picks the lowest rewording threshold (the
most paraphrase hits) whose wrong-hit rate on the negatives is at most what the
operator names: `semproxy calibrate --cache PAIRS`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semproxy.cache.difference import differ, prepare
from semproxy.cache.hitrule import DEFAULT_RULES, HitRule, rule_for
from semproxy.cache.nearmiss import near_miss
from semproxy.cache.wording import read
from semproxy.quality.rate import Rate


@dataclass(frozen=True, slots=True)
class Pair:
    a: str
    b: str
    same: bool
    category: str = ""
    kind: str = ""  # crowd, chat or edit for a paraphrase of the committed set


@dataclass(frozen=True, slots=True)
class PairFigures:
    """Paraphrases that hit (want high) and hard negatives that hit (want low)."""

    rule: HitRule
    paraphrases: Rate
    wrong: Rate

    @property
    def threshold(self) -> float:
        return self.rule.threshold


@dataclass(frozen=True, slots=True)
class Check:
    """What the near-miss reading says of one pair, whatever the cosine: the rule that
    refuses it (None: none does) and whether the two prompts have the same words."""

    refused: str | None
    same_words: bool


def load_pairs(path: Path) -> list[Pair]:
    """`{"a", "b", "same"[, "category"]}` per line; a malformed line raises ValueError."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            pairs.append(Pair(str(row["a"]), str(row["b"]), bool(row["same"]),
                              str(row.get("category", "")), str(row.get("kind", ""))))
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


def checks(pairs: Sequence[Pair]) -> list[Check]:
    """The near-miss reading of each pair (independent of any threshold)."""
    found = []
    for p in pairs:
        a, b = read(p.a), read(p.b)
        a, b, typos = prepare(a, b)
        d = differ(a, b, typos)
        found.append(Check(near_miss(a, b, d), d.same_words))
    return found


def hits(sims: np.ndarray, rule: HitRule, checked: Sequence[Check] | None = None
         ) -> np.ndarray:
    """Which pairs hit under `rule`; without `checked`, on cosine alone at `threshold`."""
    if checked is None or not rule.near_miss:
        return np.asarray(sims >= rule.threshold)
    open_ = np.array([c.refused is None for c in checked])
    needed = np.where([c.same_words for c in checked], rule.same_words, rule.threshold)
    return np.asarray(open_ & (sims >= needed))


def figures(pairs: Sequence[Pair], sims: np.ndarray, rule: HitRule,
            checked: Sequence[Check] | None = None) -> PairFigures:
    hit = hits(sims, rule, checked)
    same = np.array([p.same for p in pairs])
    return PairFigures(rule, Rate(int((hit & same).sum()), int(same.sum())),
                       Rate(int((hit & ~same).sum()), int((~same).sum())))


def by_kind(pairs: Sequence[Pair], sims: np.ndarray, rule: HitRule,
            checked: Sequence[Check] | None = None) -> dict[str, Rate]:
    """The share of pairs that hit, per paraphrase kind and for the negatives."""
    hit = hits(sims, rule, checked)
    groups: dict[str, list[bool]] = {}
    for p, h in zip(pairs, hit, strict=True):
        groups.setdefault((p.kind or "paraphrase") if p.same else "negative", []).append(bool(h))
    return {k: Rate(sum(v), len(v)) for k, v in sorted(groups.items())}


def calibrate(pairs: Sequence[Pair], sims: np.ndarray, wrong_hits: float,
              checked: Sequence[Check] | None = None, model: str = "wordllama"
              ) -> PairFigures:
    """The lowest rewording threshold (rounded up to 0.01) whose wrong-hit share is
    <= `wrong_hits`; the same-words cosine stays the model's default (or the
    threshold, if lower)."""
    def at(threshold: float) -> PairFigures:
        return figures(pairs, sims, rule_for(model, threshold, checked is not None), checked)

    best = at(1.0)
    for threshold in np.arange(1.0, -0.001, -0.01):
        found = at(round(float(threshold), 2))
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
    model = "accurate" if args.model == "accurate" else "wordllama"
    sims = asyncio.run(similarities(pairs, args.model))
    checked = checks(pairs)
    default = DEFAULT_RULES[model]
    print(f"default rule ({model}): similarity_threshold {default.threshold:.2f}, "
          f"same words {default.same_words:.2f}")
    for label, found in (("default rule", figures(pairs, sims, default, checked)),
                         (f"calibrated for <= {target:.1%} wrong hits",
                          calibrate(pairs, sims, target, checked, model)),
                         ("cosine alone, calibrated", calibrate(pairs, sims, target, None,
                                                                model))):
        print(f"{label}: similarity_threshold {found.threshold:.2f}")
        print(f"  paraphrases that hit: {found.paraphrases.text()}")
        print(f"  wrong hits:           {found.wrong.text()}")
    return 0
