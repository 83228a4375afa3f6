"""Print how a semantic route handles the conversation set: follow-ups and topic switches.

    semproxy eval --clinc150 oos-eval/data/data_full.json --k 16 --out build/clinc150
    PYTHONPATH=src python scripts/conversation_figures.py \
        --config build/clinc150/clinc150-k16.yaml --route clinc150 \
        [--data tests/quality/data/conversations/test.jsonl]

A follow-up is right when the pick is the conversation's domain; a switch when
it is the new domain. "alone-ok" rows count only conversations whose labelled
user turns each route to their own domain when sent alone (the issue's rule).
Every rate has n and a 95% Wilson interval. No LLM is called.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from semproxy.config.loader import load_file
from semproxy.quality.conversations import (
    load_conversations,
    rates,
    render_rates,
    route_conversations,
)
from semproxy.semantic.router import router_for

DATA = Path(__file__).resolve().parents[1] / "tests/quality/data/conversations/test.jsonl"


async def main(args: argparse.Namespace) -> None:
    convs = load_conversations(args.data)
    async with router_for(load_file(args.config), args.route) as router:
        results = await route_conversations(router, convs)
    print(f"{args.data}: {len(convs)} conversations, route {args.route}")
    print(render_rates(rates(results)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--route", required=True)
    parser.add_argument("--data", default=str(DATA))
    asyncio.run(main(parser.parse_args()))
