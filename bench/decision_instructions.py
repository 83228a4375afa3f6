"""Instructions per semantic routing decision, counted by callgrind, part by part.

The gateway's own `SemanticRouter` of a route built from config by the gateway's
loader (the instruction mode's semantic route: 3 instances x 16 examples plus a
catchall, `threshold: 0.3`, in-process model), driven without HTTP. A child
process runs under callgrind (bench/callgrind.py) and, for each part, waits
until the parent has switched instrumentation on, runs it `--n` times, and
reports back; the parent switches it off and reads the count:

  route-miss  `router.route` on a prompt it has not seen (embed, score, decide, remember)
  embed       the route's embedder alone, on other new prompts
  score       one embedded prompt scored (`References.score_one`, or `score` before it)
  decide      the route's rule on one row of scores
  route-hit   `router.route` on a prompt it decided before (the decision cache)

"decision without the embedding" is route-miss minus embed. The fallback warning a
route logs for a prompt that clears no threshold is switched off (logging's cost).

    PYTHONPATH=src python bench/decision_instructions.py [--n 2000] [--instances 3 --examples 16]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from callgrind import Callgrind, callgrind_argv  # noqa: E402
from prompts import LUA, read_prompt_sets, varied_prompt  # noqa: E402

PARTS = ("route-miss", "embed", "score", "decide", "route-hit")


def route_config(instances: int, examples: int) -> dict[str, object]:
    """3 x 16: the instruction mode's example sets; other sizes: routing_micro's phrases."""
    if instances <= 3 and examples <= 16:
        from run import EXAMPLES as SETS

        groups = [group[:examples] for group in list(SETS.values())[:instances]]
    else:
        from routing_micro import phrases

        rng = random.Random(instances * 1000 + examples)
        groups = [phrases(rng, examples, f"i{k}x") for k in range(instances)]
    inst: list[dict[str, object]] = [
        {"name": f"inst{i}", "provider": "echo", "weight": 1, "examples": group}
        for i, group in enumerate(groups)]
    inst.append({"name": "default", "provider": "echo", "weight": 1, "catchall": True})
    return {"routes": [{"id": "bench", "uri": "/v1/chat/completions", "plugins": {
        "ai-proxy-multi": {"balancer": {"algorithm": "semantic", "threshold": 0.3},
                           "embeddings": {"provider": "local"}, "instances": inst}}}]}


async def child(n: int, instances: int, examples: int) -> None:
    """Runs under callgrind: each part after a `go` line, then `done`."""
    # About half the benchmark's new prompts clear no threshold, and the route logs a
    # warning for each: logging's cost, not the decision's (routing_micro.py does the same).
    logging.disable(logging.WARNING)
    from semproxy.config.loader import load_data
    from semproxy.semantic.query import RoutingInput

    config = load_data(route_config(instances, examples), env={})
    try:  # the layout since issue 23
        from semproxy.runtime.compile import compile_table
        from semproxy.transport.http import AiohttpTransport
        table = compile_table(config, AiohttpTransport())
    except ImportError:  # a build before it, measured for comparison
        from semproxy.embeddings.factory import EmbedderPool
        from semproxy.providers.http import HttpClients  # type: ignore[import-not-found]
        from semproxy.server.routes import RouteTable  # type: ignore[import-not-found]
        table = RouteTable(config, EmbedderPool(HttpClients()))
    await table.warm()
    router = table.by_id["bench"].semantic
    assert router is not None and router.spec is not None
    embedder = table.pool.get(router.spec.embeddings)
    refs = await router.references()
    sets = read_prompt_sets(LUA.read_text())
    fresh = iter(varied_prompt(sets, 10**8 + i) for i in range(10 * n + 1000))
    for _ in range(200):  # warm-up: caches of words, lazily built objects
        await router.route(RoutingInput(next(fresh)))
    seen = [varied_prompt(sets, 10**8 + i) for i in range(200)]
    vectors = [await embedder.embed((next(fresh),)) for _ in range(64)]
    # The one-prompt scoring of the source measured (`score_one` since issue 27), and
    # the row it hands to the rule.
    one = getattr(refs, "score_one", None)
    score = one if one is not None else refs.score
    scores = [one(v)[0] if one is not None else refs.score(v)[0][0] for v in vectors]
    rule = getattr(router, "rule", None) or router.decide  # `decide` before issue 23
    # As a gateway worker does once started (server/run.py): what was built so far lives
    # for the whole process, and young collections run every 10,000 allocations.
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    batches = {
        "route-miss": [RoutingInput(next(fresh)) for _ in range(n)],
        "embed": [(next(fresh),) for _ in range(n)],
        "route-hit": [RoutingInput(seen[i % len(seen)]) for i in range(n)],
    }
    for part in PARTS:
        print(f"ready {part}", flush=True)
        sys.stdin.readline()
        if part == "route-miss" or part == "route-hit":
            for query in batches[part]:
                await router.route(query)
        elif part == "embed":
            for texts in batches["embed"]:
                await embedder.embed(texts)
        elif part == "score":
            for i in range(n):
                score(vectors[i % 64])
        else:
            for i in range(n):
                rule(scores[i % 64])
        print("done", flush=True)


def parent(args: argparse.Namespace) -> dict[str, float]:
    out_dir = Path(tempfile.mkdtemp(prefix="decision-cg-"))
    argv = callgrind_argv(out_dir / "cg.out", [
        sys.executable, __file__, "--child", "--n", str(args.n),
        "--instances", str(args.instances), "--examples", str(args.examples)])
    # One BLAS thread, like routing_micro.py: under valgrind the threads run one at a
    # time, and OpenBLAS's workers spinning for work would be counted (a 200 x 64 route's
    # product is big enough for OpenBLAS to split it).
    env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    cg = Callgrind(proc.pid, out_dir / "cg.out")
    per: dict[str, float] = {}
    try:
        for part in PARTS:
            line = proc.stdout.readline().strip()
            if line != f"ready {part}":
                raise RuntimeError(f"child said {line!r}, expected 'ready {part}'")
            cg.start_window()
            proc.stdin.write("go\n")
            proc.stdin.flush()
            if proc.stdout.readline().strip() != "done":
                raise RuntimeError(f"child stopped during {part}")
            per[part] = cg.end_window() / args.n
    finally:
        proc.kill()
        proc.wait()
    return per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="calls per part (default 2000)")
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--examples", type=int, default=16)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        asyncio.run(child(args.n, args.instances, args.examples))
        return
    per = parent(args)
    print(f"{args.instances} instances x {args.examples} examples, {args.n} calls per part, "
          "instructions per call:")
    for part, value in per.items():
        print(f"  {part:12s} {value / 1000:8.1f}k")
    print(f"  {'decision without the embedding':12s} "
          f"{(per['route-miss'] - per['embed']) / 1000:8.1f}k")


if __name__ == "__main__":
    main()
