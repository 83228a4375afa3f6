"""What one OS process does in the proofs: hundreds of concurrent requests through a Governor.

Run with multiprocessing (spawn): each process has its own event loop, its own
store connections and its own governor, as two gateway replicas would.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from tests.governance.plans import plan_of

from semproxy.governance.governor import Governor, RequestFacts
from semproxy.governance.governor_stores import StoreSet
from semproxy.types import Usage

INPUT_ERROR = 2  # tokens an input estimate may miss by (the answer's count is higher)


async def _spend(doc: dict[str, Any], seed: int, tasks: int, consumer: str | None
                 ) -> dict[str, int]:
    plan = plan_of(doc)
    stores = StoreSet.for_plan(plan)
    gov = Governor(plan, stores)
    rng = random.Random(seed)
    tally = {"admitted": 0, "refused": 0, "biggest_hold": 0}

    async def client() -> None:
        refusals = 0
        while refusals < 4:
            est, asked = rng.randint(100, 1000), rng.randint(50, 500)
            res = await gov.reserve(RequestFacts("r", consumer=consumer, input_tokens=est,
                                                 max_tokens=asked))
            if res.refusal is not None:
                tally["refused"] += 1
                refusals += 1
                await asyncio.sleep(0.002)
                continue
            tally["admitted"] += 1
            tally["biggest_hold"] = max(tally["biggest_hold"], est * 2000 + res.output * 8000)
            await asyncio.sleep(rng.random() * 0.004)
            used = Usage(est + rng.randint(0, INPUT_ERROR), rng.randint(0, res.output))
            await gov.commit(res, used, rng.choice(["big", "small"]))

    await asyncio.gather(*(client() for _ in range(tasks)))
    await stores.close()
    return tally


def spend_until_refused(doc: dict[str, Any], seed: int, tasks: int,
                        consumer: str | None = None, start: Any = None) -> dict[str, int]:
    if start is not None:
        start.wait(60)  # a multiprocessing barrier shared with the other process
    return asyncio.run(_spend(doc, seed, tasks, consumer))
