"""Micro-benchmark of one semantic routing decision, without any HTTP.

A decision = the gateway's own `SemanticRouter.route` on a prompt it has not
seen (embed in process + normalise + score every instance + rank/pick), on a
route built from config by the gateway's loader. Reported in microseconds per
decision, p50 and p99, for several route sizes; the embed step is also timed on
its own, and "score+pick" is the difference.

    PYTHONPATH=src python bench/routing_micro.py [--quick] [--markdown]

"""

from __future__ import annotations

# ruff: noqa: E402  (BLAS thread settings must precede the numpy import)
import argparse
import os

# One core, like one gateway worker: no BLAS thread pool in the matvec.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import asyncio
import logging
import random
import sys
import time

import numpy as np

from semproxy.config.loader import load_data
from semproxy.embeddings.local import LocalEmbedder
from semproxy.runtime.compile import compile_table
from semproxy.semantic.query import RoutingInput
from semproxy.transport.http import AiohttpTransport

EMBEDDER = "semproxy's in-process model (wordllama) through the gateway's SemanticRouter"
logging.disable(logging.WARNING)  # the fallback warning per prompt is not what is timed here

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


def route_config(examples: list[list[str]], aggregation: str) -> dict:
    """A semantic route as an operator would write it (echo instances: no network)."""
    instances = [{"name": f"inst{k}", "provider": "echo", "weight": 1, "examples": group}
                 for k, group in enumerate(examples)]
    instances.append({"name": "default", "provider": "echo", "weight": 1, "catchall": True})
    return {"routes": [{"id": "bench", "uri": "/v1/chat/completions", "plugins": {
        "ai-proxy-multi": {
            "balancer": {"algorithm": "semantic", "threshold": 0.3,
                         "aggregation": aggregation},
            # cache_size 0: every decision embeds and scores, as a cache miss does.
            "embeddings": {"provider": "local", "cache_size": 0},
            "instances": instances}}}]}


def phrases(rng: random.Random, n: int, tag: str) -> list[str]:
    return [f"{rng.choice(VERBS)} the {rng.choice(WORDS)} {rng.choice(WORDS)} "
            f"for my {rng.choice(WORDS)} {tag}{i}" for i in range(n)]


def pcts(samples_ns: list[int]) -> tuple[float, float]:
    arr = np.sort(np.asarray(samples_ns, dtype=np.float64)) / 1000.0
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 99))


async def bench(n_inst: int, n_ex: int, iters: int, aggregation: str) -> dict:
    """Time the gateway's own router (the code a request runs), not a re-creation."""
    rng = random.Random(n_inst * 1000 + n_ex)
    examples = [phrases(rng, n_ex, f"i{k}x") for k in range(n_inst)]
    table = compile_table(load_data(route_config(examples, aggregation), env={}),
                          AiohttpTransport())
    await table.warm()
    router = table.by_id["bench"].semantic
    assert router is not None
    embedder = LocalEmbedder()
    prompts = phrases(rng, iters + 64, "p")
    for p in prompts[:64]:  # warm-up
        await router.route(RoutingInput(p))
        await embedder.embed((p,))
    t_embed, t_total = [], []
    clock = time.perf_counter_ns
    for text in prompts[64:]:
        t0 = clock()
        await embedder.embed((text,))
        t1 = clock()
        await router.route(RoutingInput(text))
        t2 = clock()
        t_embed.append(t1 - t0)
        t_total.append(t2 - t1)
    t_score = [max(total - emb, 0) for total, emb in zip(t_total, t_embed, strict=True)]
    return {"embed": pcts(t_embed), "score": pcts(t_score), "total": pcts(t_total)}


async def bench_conversation(iters: int, model: str = "wordllama") -> dict:
    """A 5-turn conversation's decision (4 earlier turns already seen, so served by the
    decision cache, and one new turn) against a single new prompt, 3 x 16 examples, both
    with the local `model` (`accurate`: the strong stage re-scores ambiguous turns)."""
    rng = random.Random(5)
    examples = [phrases(rng, 16, f"i{k}x") for k in range(3)]
    routers = []
    for context in ("last_user", "conversation"):
        config = route_config(examples, "max")
        plugin = config["routes"][0]["plugins"]["ai-proxy-multi"]
        plugin["balancer"]["context"] = context
        plugin["embeddings"]["model"] = model
        # Every earlier turn (4 per conversation) and every new turn is cached: room
        # for all of them, so no earlier turn is evicted before its conversation.
        plugin["embeddings"]["cache_size"] = 5 * (iters + 64) + 1024
        table = compile_table(load_data(config, env={}), AiohttpTransport())
        await table.warm()
        router = table.by_id["bench"].semantic
        assert router is not None
        if router.cascade is not None:  # not timed: the strong model's load and references
            await router.cascade.strong.references()
        routers.append(router)
    single, talk = routers
    earlier = [tuple(phrases(rng, 4, f"e{i}x")) for i in range(iters + 64)]
    for turns in earlier:  # each earlier turn was the last turn of an earlier request
        for turn in turns:
            await talk.route(RoutingInput(turn))
    news = phrases(rng, 2 * (iters + 64), "n")
    t_one, t_five = [], []
    clock = time.perf_counter_ns
    for i, turns in enumerate(earlier):
        t0 = clock()
        await single.route(RoutingInput(news[2 * i]))
        t1 = clock()
        decision = (await talk.route(RoutingInput(news[2 * i + 1], turns))).decision
        t2 = clock()
        assert len(decision.context) == 5
        if i >= 64:  # the first ones warm up
            t_one.append(t1 - t0)
            t_five.append(t2 - t1)
    return {"one": pcts(t_one), "five": pcts(t_five)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="300 decisions per size")
    ap.add_argument("--iters", type=int)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--conversation-only", action="store_true",
                    help="only the conversation cost, with the fast and the accurate model")
    args = ap.parse_args()
    iters = args.iters or (300 if args.quick else 3000)
    if args.conversation_only:
        for model in ("wordllama", "accurate"):
            conv = asyncio.run(bench_conversation(iters, model))
            print(f"{model}: single prompt p50 {conv['one'][0]:.1f} us p99 {conv['one'][1]:.1f}, "
                  f"5 turns (4 cached) p50 {conv['five'][0]:.1f} us p99 {conv['five'][1]:.1f}, "
                  f"{conv['five'][0] / conv['one'][0]:.2f}x")
        return
    sizes = [(3, 16, "max"), (3, 64, "max"), (20, 64, "max"), (200, 64, "max"),
             (200, 64, "top_k_mean")]
    rows = []
    for n_inst, n_ex, agg in sizes:
        r = asyncio.run(bench(n_inst, n_ex, iters, agg))
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
    conv = asyncio.run(bench_conversation(iters))
    ratio = conv["five"][0] / conv["one"][0]
    if not args.markdown:
        print(f"conversation: single prompt p50 {conv['one'][0]:.1f} us, 5 turns (4 cached) "
              f"p50 {conv['five'][0]:.1f} us, {ratio:.2f}x", file=sys.stderr)
    out += ["", f"Conversation routing (`context: conversation`, 3 x 16, {iters} decisions): "
            "a 5-turn conversation whose 4 earlier turns were seen before (decision cache) "
            "against one new prompt on a `last_user` route.", "",
            "| decision | p50 us | p99 us |", "|---|---:|---:|",
            f"| single new prompt | {conv['one'][0]:.1f} | {conv['one'][1]:.1f} |",
            f"| 5 turns, 4 cached | {conv['five'][0]:.1f} | {conv['five'][1]:.1f} |",
            f"| ratio (p50) | {ratio:.2f}x | |"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
