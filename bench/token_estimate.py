"""How close governance/tokens.py's counts are to OpenAI's o200k_base tokenizer.

    pip install --target build/bpelib bpe-openai   # the reference only, not a dependency
    PYTHONPATH=build/bpelib .venv/bin/python bench/token_estimate.py

Texts: 300 CLINC150 prompts, 300 paragraphs of docs/en, 300 chunks of Python source
(src/), 300 paragraphs of docs/zh. Prints, per set and overall, the median ratio of
each count to o200k's (95% bootstrap interval) and the share of texts where the
count is at least o200k's (what a reservation needs).
"""

from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path

import bpe_openai  # type: ignore[import-not-found]

from semproxy.governance.tokens import count_tokens, estimate_tokens

ROOT = Path(__file__).resolve().parents[1]


def texts() -> dict[str, list[str]]:
    rng = random.Random(0)
    clinc = json.loads((ROOT.parent / "shared/data/clinc150_train_val.json").read_text())
    prompts = [p for p in _strings(clinc) if len(p) > 3]
    docs = [p for f in sorted((ROOT / "docs/en").glob("*.md"))
            for p in f.read_text().split("\n\n") if len(p) > 80]
    zh = [p for f in sorted((ROOT / "docs/zh").glob("*.md"))
          for p in f.read_text().split("\n\n") if len(p) > 40]
    code = [c for f in sorted((ROOT / "src").rglob("*.py"))
            for c in f.read_text().split("\n\n\n") if len(c) > 80]
    return {name: rng.sample(items, min(300, len(items)))
            for name, items in (("prompts", prompts), ("docs", docs), ("code", code),
                                ("zh", zh))}


def _strings(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def interval(values: list[float]) -> tuple[float, float]:
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(1000))
    return meds[25], meds[974]


def main() -> None:
    ref = bpe_openai.get_encoding("o200k_base")
    everything: dict[str, list[float]] = {"estimate": [], "count": []}
    for name, items in texts().items():
        real = [max(1, len(ref.encode(t))) for t in items]
        for what, fn in (("estimate", estimate_tokens), ("count", count_tokens)):
            start = time.perf_counter()
            ratios = [fn(t) / r for t, r in zip(items, real, strict=True)]
            us = (time.perf_counter() - start) / len(items) * 1e6
            everything[what] += ratios
            low, high = interval(ratios)
            covered = sum(r >= 1 for r in ratios) / len(ratios)
            print(f"{name:8} {what:8} n={len(items)} median {statistics.median(ratios):.3f} "
                  f"[{low:.3f}, {high:.3f}] >= o200k {covered:.1%}  {us:.1f} us/text "
                  f"(mean {statistics.mean(real):.0f} tokens)")
    for what, ratios in everything.items():
        low, high = interval(ratios)
        print(f"all      {what:8} n={len(ratios)} median {statistics.median(ratios):.3f} "
              f"[{low:.3f}, {high:.3f}] >= o200k {sum(r >= 1 for r in ratios) / len(ratios):.1%}")


if __name__ == "__main__":
    main()
