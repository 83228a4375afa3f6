"""Live close calls while a batch eval shares the strong model (`model: accurate`).

    PYTHONPATH=src python bench/strong_priority.py [--batch 3000] [--live 100]

One process, as a gateway with the playground: a live router (the gateway's,
its strong stage through the bounded queue) and a batch router from
`router_for` (what `eval`, `calibrate` and the playground's batch endpoints
build) share the process's one strong thread. The batch routes `--batch`
prompts with `route_many`; meanwhile one live prompt every 20 ms is routed
with `route`, and its wall time is recorded. Prompts are close calls of a
banking/cooking route, each made unique so no cache answers it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from semproxy.config.loader import load_data
from semproxy.embeddings.factory import EmbedderPool
from semproxy.transport.http import AiohttpTransport
from semproxy.semantic.query import RoutingInput, prompt_input
from semproxy.semantic.router import open_router, router_for

BANKING = ["what is my account balance", "transfer money to savings", "why was my card declined",
           "report a fraudulent charge", "when is my credit card bill due"]
COOKING = ["how long do i boil an egg", "give me a lasagna recipe",
           "what can i use instead of butter", "how many calories are in rice",
           "suggest a quick vegetarian dinner"]
CLOSE = ["cheap meals on a budget", "money for dinner", "buy groceries with credit",
         "split the bill", "pay for dinner with my card", "what should i cook tonight"]


def config() -> object:
    def inst(name: str, **extra: object) -> dict[str, object]:
        return {"name": name, "provider": "echo", "weight": 1, **extra}

    return load_data({"routes": [{"id": "r1", "uri": "/v1/chat/completions", "plugins": {
        "ai-proxy-multi": {
            "balancer": {"algorithm": "semantic", "threshold": "auto"},
            "embeddings": {"provider": "local", "model": "accurate"},
            "instances": [inst("banking", examples=BANKING), inst("cooking", examples=COOKING),
                          inst("default", catchall=True)]}}}]}, {})


async def main(batch: int, live: int) -> None:
    cfg = config()
    route = cfg.routes[0]  # type: ignore[attr-defined]
    clients = AiohttpTransport()
    pool = EmbedderPool(clients)
    emb = route.semantic.embeddings
    router = open_router(route, pool.get(emb), pool.strong(emb))
    await router.references()
    while router.cascade is not None and router.cascade.strong.current is None:
        await asyncio.sleep(0.05)  # a gateway that built its strong references
    texts = [f"{CLOSE[i % len(CLOSE)]} please, case {i}" for i in range(batch)]
    async with router_for(cfg, "r1") as batch_router:  # type: ignore[arg-type]
        await batch_router.references()
        started = time.perf_counter()
        work = asyncio.create_task(batch_router.route_many([prompt_input(t) for t in texts]))
        waits = []
        for n in range(live):
            if work.done():
                break
            t0 = time.perf_counter()
            await router.route(RoutingInput(f"{CLOSE[n % len(CLOSE)]} now, live {n}"))
            waits.append(time.perf_counter() - t0)
            await asyncio.sleep(0.02)
        await work
        took = time.perf_counter() - started
    await clients.aclose()
    waits.sort()
    p99 = waits[min(len(waits) - 1, int(0.99 * len(waits)))]
    print(f"batch of {batch} close calls: {took:.1f} s; {len(waits)} live close calls "
          f"meanwhile (strong stage: {router.stages['strong']}): p50 "
          f"{1e3 * statistics.median(waits):.0f} ms, p99 {1e3 * p99:.0f} ms, "
          f"max {1e3 * waits[-1]:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=3000)
    parser.add_argument("--live", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(main(args.batch, args.live))
