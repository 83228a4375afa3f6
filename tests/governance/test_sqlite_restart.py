"""A SQLite money budget survives a restart of the gateway process: what was spent before
SIGTERM is still spent after, the refusal goes on, and the ledger has every request."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from tests.governance.gateways import (
    PROTOCOLS,
    Served,
    ask,
    start_all,
    usage_of,
    write_config,
)

from semproxy.config.loader import load_data
from semproxy.governance.governor import Governor
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.spend import spend

KEY = "proof-key-0123"


async def test_a_sqlite_budget_survives_a_gateway_restart(tmp_path: Path) -> None:
    doc = {
        "listen": "127.0.0.1:0",
        "governance": {"sqlite_path": str(tmp_path / "spend.db")},
        "consumers": [{"username": "proof", "plugins": {
            "key-auth": {"key": KEY},
            "ai-rate-limiting": {"limits": [{"money": 0.002, "window": "month"}]}}}],
        "routes": [{"id": "r", "uri": "/r/*", "plugins": {"key-auth": {}, "ai-proxy-multi": {
            "instances": [{"name": "e", "provider": "echo", "weight": 1,
                           "options": {"model": "e"}, "pricing": {"input": 2, "output": 8}}]}}}],
    }
    path = write_config(tmp_path / "gateway.json", doc)
    gw = Served(path)
    served = 0
    # No keep-alive: a connection to the first process must not be reused after it exits.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        start_all([gw])
        for n in range(200):
            status, _ = await ask(http, gw.url + "/r", PROTOCOLS[n % 3], "a few words here", 20,
                                  n % 2 == 0)
            if status != 200:
                break
            served += 1
        assert 0 < served < 200 and status == 429  # the budget ran out
        assert gw.stop() == 0
        start_all([gw])  # the same port, the same file
        try:
            after = [(await ask(http, gw.url + "/r", "chat/completions", "again", 20, False))[0]
                     for _ in range(3)]
        finally:
            assert gw.stop() == 0
    assert after == [429, 429, 429]  # still spent
    plan = load_data(doc).governance
    assert plan is not None
    gov = Governor(plan, StoreSet.for_plan(plan))
    try:
        (row,) = await spend(gov, "consumer", "all")
    finally:
        await gov.stores.close()
    # Used up to within one hold (its input bound and 20 output tokens: under 0.00025).
    assert row.requests == served and 0.002e9 - 250_000 <= row.cost <= 0.002e9


def test_the_proof_helpers_parse_usage_of_every_protocol() -> None:
    assert usage_of("chat/completions", b'{"usage":{"prompt_tokens":3,"completion_tokens":4}}',
                    False) == (3, 4)
    stream = (b'event: message_start\ndata: {"type":"message_start","message":{"usage":'
              b'{"input_tokens":5,"output_tokens":1}}}\n\n'
              b'data: {"type":"message_delta","usage":{"output_tokens":6}}\n\n')
    assert usage_of("messages", stream, True) == (5, 6)
    done = b'data: {"type":"response.completed","response":{"usage":{"input_tokens":2,' \
           b'"output_tokens":9}}}\n\n'
    assert usage_of("responses", done, True) == (2, 9)
