"""Memory a big request body holds in the gateway while its upstream call is in flight.

A 9.4 MB body of small messages is sent to a real `semproxy serve` process
(one openai-compatible instance: a raw upstream in this process that reads the
body, waits until every concurrent call has arrived, holds them HOLD seconds,
then answers). tracemalloc runs inside the gateway (the tracer of
tests/reliability/traced, sampling every 2 ms): Python-level bytes, free of the
allocator's retention that blurs resident size. Per round the report gives,
over the idle figure before it, what is held in the middle of the hold, the
Python-level peak, and the peak of resident size (sampled every 5 ms).

    .venv/bin/python -m bench.body_memory [--runs 5] [--concurrent 8] [--concurrent-only]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
from tests.fakes.raw import RawServer, answer
from tests.reliability.process import GatewayProcess, TracedMemory

MB = 1024 * 1024
HOLD = 2.0
CHAT_ANSWER = orjson.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


def small_messages(size: int) -> bytes:
    """About `size` bytes of short alternating turns (a Chat and a Messages body alike)."""
    turns = [{"role": "user", "content": "hi there, how are you"},
             {"role": "assistant", "content": "fine thanks, and you"}]
    messages = turns * (size // len(orjson.dumps(turns)))
    return orjson.dumps({"model": "auto", "max_tokens": 16,
                         "messages": [*messages, {"role": "user", "content": "hello"}]})


class Resident(threading.Thread):
    """The gateway's resident size, sampled every 5 ms until `stop`."""

    def __init__(self, gw: GatewayProcess) -> None:
        super().__init__(daemon=True)
        self.gw, self.stop, self.peak = gw, False, 0

    def run(self) -> None:
        while not self.stop:
            self.peak = max(self.peak, self.gw.rss_bytes())
            time.sleep(0.005)


async def measure(path: str, concurrent: int, runs: int) -> None:
    arrived: list[float] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       n: int) -> None:
        raw.bodies.clear()  # keep no copies in this process
        arrived.append(time.monotonic())
        while len(arrived) < concurrent and time.monotonic() - arrived[-1] < 10:
            await asyncio.sleep(0.01)  # until all have come (or one stopped on its way)
        await asyncio.sleep(HOLD)
        writer.write(answer(CHAT_ANSWER, "Content-Type: application/json"))
        await writer.drain()

    raw = RawServer(upstream)
    body = small_messages(int(9.4 * MB))
    async with raw:
        config = {"listen": "127.0.0.1:0", "client_body_timeout": 300, "routes": [
            {"id": "r", "uri": "/v1/*", "plugins": {
            "ai-proxy-multi": {"max_req_body_size": 16 * MB, "timeout": 300_000, "instances": [
                {"name": "a", "provider": "openai-compatible", "weight": 1,
                 "options": {"model": "m"}, "override": {"endpoint": raw.url}}]}}}]}
        with tempfile.TemporaryDirectory() as tmp:
            traced = TracedMemory(Path(tmp))
            gw = await GatewayProcess(config, Path(tmp), env=traced.env).astart()
            try:
                rows = [await one_round(gw, traced, path, body, concurrent, arrived)
                        for _ in range(runs + 1)][1:]  # the first round warms up
            finally:
                gw.stop()
    held, peak, rss = zip(*rows, strict=True)
    print(f"{path} {len(body) / MB:.1f} MB x{concurrent}, n={runs}: held {summary(held)} MB, "
          f"peak {summary(peak)} MB, resident peak {summary(rss)} MB (over idle)")


async def one_round(gw: GatewayProcess, traced: TracedMemory, path: str, body: bytes,
                    concurrent: int, arrived: list[float]) -> tuple[float, float, float]:
    await asyncio.sleep(0.5)
    baseline = gw.rss_bytes()
    idle = await asyncio.to_thread(traced.current)
    started = time.monotonic()
    arrived.clear()
    resident = Resident(gw)
    resident.start()
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(concurrent) as pool:  # the default one may have fewer threads
        statuses = await asyncio.gather(*[loop.run_in_executor(pool, send, gw.url + path, body)
                                          for _ in range(concurrent)])
    resident.stop = True
    resident.join()
    assert statuses == [200] * concurrent, statuses
    middle = max(arrived) + HOLD / 2
    held = next(current for at, current, _ in traced.samples(middle))
    peak = traced.peak(started)
    return (held - idle) / MB, (peak - idle) / MB, (resident.peak - baseline) / MB


def send(url: str, body: bytes) -> int:
    host, _, rest = url.removeprefix("http://").partition("/")
    name, port = host.split(":")
    conn = http.client.HTTPConnection(name, int(port), timeout=400)
    conn.request("POST", "/" + rest, body, {"Content-Type": "application/json",
                                           "anthropic-version": "2023-06-01"})
    status = conn.getresponse().status
    conn.close()
    return status


def summary(values: tuple[float, ...]) -> str:
    mean = statistics.fmean(values)
    half = 1.96 * statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0
    return f"{mean:.0f} +- {half:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrent", type=int, default=8)
    parser.add_argument("--concurrent-only", action="store_true")
    args = parser.parse_args()
    if not args.concurrent_only:
        asyncio.run(measure("/v1/chat/completions", 1, args.runs))
        asyncio.run(measure("/v1/messages", 1, args.runs))
    asyncio.run(measure("/v1/messages", args.concurrent, args.runs))


if __name__ == "__main__":
    main()
