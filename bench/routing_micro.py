"""Micro-benchmark of one semantic routing decision, without any HTTP.

A decision = embed the prompt (wordllama, in process) + normalise + score every
instance (one matrix-vector product, max per instance) + rank/pick. Reported in
microseconds per decision, p50 and p99, for several route sizes, with the embed
step and the score+pick step also timed on their own.

    PYTHONPATH=src python bench/routing_micro.py [--quick] [--markdown]

Uses semproxy.embeddings.local (load_model, embed_with) when it is importable,
otherwise wordllama directly with the same settings; the vector math always
comes from semproxy.balancer.similarity.
"""

from __future__ import annotations

# ruff: noqa: E402  (BLAS thread settings must precede the numpy import)
import argparse
import os

# One core, like one gateway worker: no BLAS thread pool in the matvec.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pathlib
import random
import sys
import time

import numpy as np

from semproxy.balancer.similarity import instance_scores, normalize, rank

try:
    from semproxy.embeddings.local import embed_with, load_model

    EMBEDDER = "semproxy.embeddings.local (wordllama)"
except ImportError:
    load_model = None
    EMBEDDER = "wordllama directly"

WORDS = (
    "python", "rust", "sql", "kubernetes", "invoice", "recipe", "poem", "contract", "tax",
    "vaccine", "orbit", "guitar", "marathon", "mortgage", "garden", "chess", "protein",
    "sonnet", "budget", "firewall", "neuron", "glacier", "violin", "startup", "lawsuit",
    "yoga", "pension", "galaxy", "compiler", "espresso", "tariff", "pollen", "castle",
    "vintage", "drone", "quarterly", "migraine", "telescope", "lullaby", "spreadsheet",
    "volcano",
)
VERBS = ("explain", "write", "fix", "summarize", "translate", "compare", "plan", "review",
         "draft", "estimate", "debug", "describe")


def get_model():
    if load_model is not None:
        return load_model(), lambda m, texts: embed_with(m, texts)
    import wordllama
    from wordllama import WordLlama

    model = WordLlama.load(config="l2_supercat", dim=256,
                           cache_dir=pathlib.Path(wordllama.__file__).parent,
                           disable_download=True)
    return model, lambda m, texts: m.embed(texts)


def phrases(rng: random.Random, n: int, tag: str) -> list[str]:
    return [f"{rng.choice(VERBS)} the {rng.choice(WORDS)} {rng.choice(WORDS)} "
            f"for my {rng.choice(WORDS)} {tag}{i}" for i in range(n)]


def pcts(samples_ns: list[int]) -> tuple[float, float]:
    arr = np.sort(np.asarray(samples_ns, dtype=np.float64)) / 1000.0
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 99))


def bench(model, embed, n_inst: int, n_ex: int, iters: int, aggregation: str) -> dict:
    rng = random.Random(n_inst * 1000 + n_ex)
    examples = [phrases(rng, n_ex, f"i{k}x") for k in range(n_inst)]
    flat = [e for group in examples for e in group]
    refs = normalize(embed(model, flat))
    bounds = np.arange(0, n_inst * n_ex + 1, n_ex)
    names = [f"inst{k}" for k in range(n_inst)]
    thresholds = [0.3] * n_inst
    prompts = phrases(rng, 512, "p")

    def score_pick(vec) -> str:
        scores = instance_scores(normalize(vec), refs, bounds, aggregation=aggregation)
        cleared, _ = rank(names, scores, thresholds)
        return cleared[0][0] if cleared else "catchall"

    for p in prompts[:64]:  # warm-up
        score_pick(embed(model, [p])[0])

    t_embed, t_score, t_total = [], [], []
    clock = time.perf_counter_ns
    for i in range(iters):
        text = prompts[i % len(prompts)]
        t0 = clock()
        vec = embed(model, [text])[0]
        t1 = clock()
        score_pick(vec)
        t2 = clock()
        t_embed.append(t1 - t0)
        t_score.append(t2 - t1)
        t_total.append(t2 - t0)
    return {"embed": pcts(t_embed), "score": pcts(t_score), "total": pcts(t_total)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="300 decisions per size")
    ap.add_argument("--iters", type=int)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    iters = args.iters or (300 if args.quick else 3000)
    model, embed = get_model()
    sizes = [(3, 16, "max"), (3, 64, "max"), (20, 64, "max"), (200, 64, "max"),
             (200, 64, "top_k_mean")]
    rows = []
    for n_inst, n_ex, agg in sizes:
        r = bench(model, embed, n_inst, n_ex, iters, agg)
        rows.append((n_inst, n_ex, agg, r))
        if not args.markdown:
            print(f"{n_inst:4d} x {n_ex:3d} {agg:10s} embed p50 {r['embed'][0]:7.1f} us  "
                  f"score+pick p50 {r['score'][0]:7.1f} us  total p50 {r['total'][0]:7.1f} "
                  f"p99 {r['total'][1]:7.1f} us", file=sys.stderr)
    out = [f"{iters} decisions per size, one prompt at a time on one core; embedder: "
           f"{EMBEDDER}; numpy {np.__version__}. Prompts ~50 characters, "
           "every one distinct from the examples.", "",
           "| instances x examples | aggregation | embed p50 us | embed p99 us "
           "| score+pick p50 us | score+pick p99 us | decision p50 us | decision p99 us |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for n_inst, n_ex, agg, r in rows:
        out.append(f"| {n_inst} x {n_ex} | {agg} | {r['embed'][0]:.1f} | {r['embed'][1]:.1f} "
                   f"| {r['score'][0]:.1f} | {r['score'][1]:.1f} "
                   f"| {r['total'][0]:.1f} | {r['total'][1]:.1f} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
