"""What one OS process does in the proofs: hundreds of concurrent requests through a Governor.

Run with multiprocessing (spawn): each process has its own event loop, its own
store connections and its own governor, as two gateway replicas would.

Requests are real texts (paragraphs of the docs, English and Chinese). A
request's hold uses the input bound (`tokens.input_bound`). One request in five
has input the bound cannot cover (an audio part): its answer reports up to
`UNPROVEN_ERROR` tokens more than its bound. The others report, `realistic`,
what a byte-level BPE tokenizer really counts (the Llama-2 tokenizer wordllama
ships) plus the chat template's tokens, never above the bound, and a random
share of the granted output; or, adversarial, their whole bound and their whole
granted output after 20-60 ms, so many requests are in flight when the budget
runs out and no answer gives back room that would hide the others' errors. The
tally keeps the largest amount by which any single answer cost more
than its hold.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from tests.governance.plans import plan_of

from semproxy.governance.governor import Governor, RequestFacts
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.tokens import count_tokens, input_bound
from semproxy.types import Usage

UNPROVEN_SHARE = 0.2
UNPROVEN_ERROR = 50_000  # tokens an unproven request's answer may count beyond its bound
TEMPLATE_TOKENS = 7  # what a chat template adds around one user message
PRICE_IN, PRICE_OUT = 2000, 8000  # nanos per token (plans.document: 2 and 8 per million)
DOCS = Path(__file__).resolve().parents[2] / "docs"


def texts() -> list[tuple[int, int]]:
    """(bound, real count) of 200 paragraphs of the docs."""
    paragraphs = [p for lang in ("en", "zh") for f in sorted((DOCS / lang).glob("*.md"))
                  for p in f.read_text(encoding="utf-8").split("\n\n") if len(p) > 40]
    picked = random.Random(0).sample(paragraphs, 200)
    out = []
    for text in picked:
        bound = input_bound({"messages": [{"role": "user", "content": text}]}).tokens
        real = count_tokens(text) + TEMPLATE_TOKENS
        assert real <= bound, (real, bound, text[:80])
        out.append((bound, real))
    return out


async def _spend(doc: dict[str, Any], seed: int, tasks: int, consumer: str | None,
                 realistic: bool, corpus: list[tuple[int, int]]) -> dict[str, int]:
    plan = plan_of(doc)
    stores = StoreSet.for_plan(plan)
    gov = Governor(plan, stores)
    rng = random.Random(seed)
    tally = {"admitted": 0, "refused": 0, "unproven": 0, "worst_error": 0}

    async def client() -> None:
        quota_refusals = 0
        while quota_refusals < 4:
            bound, real = rng.choice(corpus)
            proven = rng.random() >= UNPROVEN_SHARE
            asked = rng.randint(50, 500)
            res = await gov.reserve(RequestFacts("r", consumer=consumer, input_tokens=bound,
                                                 max_tokens=asked, input_proven=proven))
            if res.refusal is not None:
                tally["refused"] += 1
                quota_refusals += res.refusal.reason == "quota"
                await asyncio.sleep(0.002)
                continue
            tally["admitted"] += 1
            tally["unproven"] += not proven
            await asyncio.sleep(rng.random() * 0.004 if realistic else rng.uniform(0.02, 0.06))
            if not proven:
                used_in = bound + rng.randint(0, UNPROVEN_ERROR)
            else:
                used_in = real if realistic else bound
            used = Usage(used_in, rng.randint(0, res.output) if realistic else res.output)
            held = bound * PRICE_IN + res.output * PRICE_OUT
            cost = used.input * PRICE_IN + used.output * PRICE_OUT
            tally["worst_error"] = max(tally["worst_error"], cost - held)
            await gov.commit(res, used, rng.choice(["big", "small"]))

    await asyncio.gather(*(client() for _ in range(tasks)))
    await stores.close()
    return tally


def spend_until_refused(doc: dict[str, Any], seed: int, tasks: int,
                        consumer: str | None = None, start: Any = None,
                        realistic: bool = True) -> dict[str, int]:
    corpus = texts()  # before the start line: loading the tokenizer takes a while
    if start is not None:
        start.wait(60)  # a multiprocessing barrier shared with the other process
    return asyncio.run(_spend(doc, seed, tasks, consumer, realistic, corpus))


async def _take(doc: dict[str, Any], seed: int, tasks: int, now: float) -> dict[str, int]:
    plan = plan_of(doc)
    stores = StoreSet.for_plan(plan)
    gov = Governor(plan, stores, clock=lambda: now)  # one window for the whole run
    rng = random.Random(seed)
    tally = {"admitted": 0, "tokens": 0}

    async def client() -> None:
        refusals = 0
        while refusals < 4:
            res = await gov.reserve(RequestFacts("r", input_tokens=rng.randint(50, 150),
                                                 max_tokens=50))
            if res.refusal is not None:
                refusals += 1
                await asyncio.sleep(0.002)
                continue
            tally["admitted"] += 1
            await asyncio.sleep(rng.random() * 0.004)
            used = Usage(res.input_tokens, rng.randint(0, res.output))
            tally["tokens"] += used.total
            await gov.commit(res, used, "big")

    await asyncio.gather(*(client() for _ in range(tasks)))
    await stores.close()
    return tally


def take_until_refused(doc: dict[str, Any], seed: int, tasks: int, now: float,
                       start: Any) -> dict[str, int]:
    """Requests against `policy: local` limits until refused (the per-host proof)."""
    start.wait(60)
    return asyncio.run(_take(doc, seed, tasks, now))


def open_at_once(path: str, start: Any) -> str:
    """Open a SQLite store the moment the other process does (workers starting together)."""
    from semproxy.governance.sqlite_store import SqliteStore

    store = SqliteStore(path)
    start.wait(60)
    try:
        store._call(lambda db: db.execute("SELECT 1").fetchone())
    except Exception as exc:  # the test wants to see any failure, whatever its type
        return repr(exc)
    return "ok"
