"""Big bodies do not leave the gateway bigger: RSS returns near its baseline."""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from .conftest import BODY_LIMIT, CHAT, assert_healthy, post, semantic_route
from .process import GatewayProcess

MB = 1024 * 1024
# Allocators keep some freed memory for reuse; a leak of even a tenth of one body
# per request would pass 40 MB well before the 48 requests below are done.
SLACK = 40 * MB


def big(size: int, shape: str) -> bytes:
    text = "write a python function " + "x" * size
    content: object = text if shape == "string" else [{"type": "text", "text": text}]
    return orjson.dumps({"messages": [{"role": "user", "content": content}]})


def test_rss_returns_to_baseline_after_a_batch_of_big_bodies(tmp_path: Path) -> None:
    config = {"listen": "127.0.0.1:0", "routes": [semantic_route(max_req_body_size=BODY_LIMIT)]}
    bodies = [big(9 * MB, "string"), big(9 * MB, "parts"), big(13 * MB, "string")]
    with GatewayProcess(config, tmp_path) as gw, ThreadPoolExecutor(4) as pool:
        def send(body: bytes) -> int:
            return post(gw.url, CHAT, body, timeout=60).status

        assert list(pool.map(send, bodies * 2)) == [200, 200, 413] * 2  # warm the allocator
        baseline = gw.rss_bytes()
        statuses = list(pool.map(send, bodies * 16))
        after = gw.rss_bytes()
        assert statuses == [200, 200, 413] * 16
        assert_healthy(gw)
    del bodies
    gc.collect()
    assert after - baseline < SLACK, (baseline // MB, after // MB)
