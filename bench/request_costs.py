"""What the gateway's own code costs per request, part by part, without any HTTP.

The throughput table compares whole processes. This script times, in one
process and on one core, the pieces of the request path that semproxy adds on
top of the aiohttp server + client round trip that the relay also pays:

- JSON in and out: parsing the client's body, building the upstream body, and
  reading token usage from the answer;
- the semantic decision as the handler makes it (router plus metrics), on new
  prompts and on repeated ones, with the fallback warning the route writes
  when no instance clears its threshold;
- accounting: metrics, the playground's decision log and the JSON access line
  (written to /dev/null through the gateway's own log handler).

The routes are the benchmark's own (`run.py gateway_config`), built by the
gateway's loader. Microseconds per request, p50 and mean over `--iters`.

    PYTHONPATH=src python bench/request_costs.py [--iters N] [--markdown]
"""

from __future__ import annotations

# ruff: noqa: E402  (BLAS thread settings must precede the numpy import)
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import asyncio
import logging
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import FIXED, gateway_config  # the throughput run's own routes

from semproxy.config.loader import load_data
from semproxy.observability.decisions import DecisionLog
from semproxy.observability.fanout import FanoutObserver
from semproxy.observability.logging import setup_logging
from semproxy.observability.metrics import Metrics
from semproxy.protocols.chat import ChatPassThrough
from semproxy.protocols.registry import CHAT_COMPLETIONS as CHAT
from semproxy.runtime.compile import compile_table
from semproxy.runtime.routes import RouteState, RouteTable
from semproxy.semantic.decision import Decision
from semproxy.server.account import finish
from semproxy.server.exchange import Attempt, Exchange
from semproxy.server.route import semantic_decision
from semproxy.transport.http import AiohttpTransport
from semproxy.types import Usage

# The varied prompts of post.lua, built the same way: verb x topic x style, then a serial.
VERBS = (
    "explain",
    "summarize",
    "rewrite",
    "translate",
    "debug",
    "compare",
    "describe",
    "outline",
    "critique",
    "simplify",
    "estimate",
    "list",
)
TOPICS = (
    "a recursive sql query",
    "the french revolution",
    "a rust borrow error",
    "photosynthesis in desert plants",
    "a kubernetes crashloop",
    "the causes of inflation",
    "a sonnet about autumn rain",
    "binary search on rotated arrays",
    "the rules of cricket",
    "a marketing email for running shoes",
    "quantum entanglement",
    "a failing pytest fixture",
    "the history of the printing press",
    "a budget for a small bakery",
)
STYLES = (
    "for a beginner",
    "in three bullet points",
    "with an example",
    "as briefly as possible",
    "for a senior engineer",
    "in plain english",
    "step by step",
)


def body(n: int) -> bytes:
    t = n // len(VERBS)
    prompt = (
        f"{VERBS[n % len(VERBS)]} {TOPICS[t % len(TOPICS)]} "
        f"{STYLES[(t // len(TOPICS)) % len(STYLES)]} (ref {n})"
    )
    return orjson.dumps({"model": "auto", "messages": [{"role": "user", "content": prompt}]})


async def timed(n: int, step: Callable[[int], Awaitable[object] | object]) -> tuple[float, float]:
    """p50 and mean microseconds of `step(i)` over n calls (after 64 warm-up calls)."""
    samples = []
    clock = time.perf_counter_ns
    for i in range(-64, n):
        t0 = clock()
        out = step(i + 64)
        if asyncio.iscoroutine(out):
            await out
        if i >= 0:
            samples.append(clock() - t0)
    return statistics.median(samples) / 1000, statistics.fmean(samples) / 1000


def table_for(kind: str, observer: FanoutObserver) -> RouteTable:
    config = load_data(gateway_config(1, kind, "http://127.0.0.1:9", "http://127.0.0.1:9"), env={})
    return compile_table(config, AiohttpTransport(), observer)


def exchange_for(route: RouteState, decision: Decision | None,
                 observer: FanoutObserver) -> Exchange:
    ex = Exchange(f"{id(route):016x}{time.perf_counter_ns():016x}", CHAT, observer)
    ex.route, ex.status, ex.model, ex.decision = route, 200, "auto", decision
    ex.attempts.append(Attempt(route.names[0], "ok"))
    ex.usage = Usage(input=8, output=9)
    return ex


async def measure(iters: int) -> list[tuple[str, tuple[float, float]]]:
    observer = FanoutObserver(Metrics(), DecisionLog())
    rr = table_for("rr", observer).routes[0]
    semantic_table = table_for("local", observer)
    await semantic_table.warm()
    sem = semantic_table.routes[0]
    options = rr.spec.instances[0].options
    bodies = [body(i) for i in range(3 * iters + 256)]
    reader = ChatPassThrough()
    parsed = [CHAT.parse(b) for b in bodies]

    assert sem.semantic is not None
    routed = (await sem.semantic.route(parsed[0].query)).decision

    def account(route: RouteState, decision: Decision | None) -> Callable[[int], None]:
        def step(_: int) -> None:
            ex = exchange_for(route, decision, observer)
            observer.on_attempt(route.spec.id, ex.instance, "ok", 0.001)
            finish(ex)

        return step

    rows = [
        ("parse the client body", await timed(iters, lambda i: CHAT.parse(bodies[i]))),
        (
            "build the upstream body",
            await timed(iters, lambda i: orjson.dumps({**parsed[i].payload, **options})),
        ),
        ("read usage from the answer", await timed(iters, lambda _: reader.answer(FIXED))),
        (
            "accounting, round-robin (metrics, decision log, access line)",
            await timed(iters, account(rr, None)),
        ),
        ("accounting, semantic", await timed(iters, account(sem, routed))),
    ]
    new = parsed[iters + 128 :]

    async def decide_new(i: int) -> object:
        ex = Exchange("bench", CHAT, observer)
        ex.parsed = new[i]
        return await semantic_decision(sem, ex)

    rows.append(
        (
            "semantic decision, new prompt (embed, score, pick, metrics, warning)",
            await timed(iters, decide_new),
        )
    )
    rows.append(
        ("semantic decision, repeated prompt (decision cache)", await timed(iters, decide_new))
    )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=3000)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    os.dup2(devnull, 2)  # the access and warning lines are written, to /dev/null
    try:
        setup_logging()
        rows = asyncio.run(measure(args.iters))
        logging.shutdown()  # the batched lines go out now, still to /dev/null
    finally:
        os.dup2(saved, 2)
    out = [
        f"Per-request costs of semproxy's own code ({args.iters} requests per row, one core, "
        "in one process, log lines written to /dev/null by the gateway's handler):",
        "",
        "| part of the request path | p50 us | mean us |",
        "|---|---:|---:|",
    ]
    out += [f"| {name} | {p50:.1f} | {mean:.1f} |" for name, (p50, mean) in rows]
    print("\n".join(out) if args.markdown else "\n".join(out[4:]))


if __name__ == "__main__":
    main()
