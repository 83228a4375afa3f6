"""The parts of the mock upstream that nginx cannot do with a fixed `return`.

* POST /v1/chat/completions with "stream": true -> a timed SSE stream:
  N chunks, chunk i written at t0 + i * interval (absolute schedule, so
  sleep jitter does not accumulate). Each chunk carries the monotonic time
  it was written as `ts<nanoseconds>` in its content; the client compares
  that with the arrival time (CLOCK_MONOTONIC is shared by all processes).
  Without "stream" it answers one fixed chat.completion.
* POST /v1/embeddings -> one deterministic vector per input, with correct
  indices. nginx forwards only large (batch) embedding requests here; the
  per-prompt ones are answered by nginx itself.

    python bench/mock_py.py --listen 127.0.0.1:8002 --chunks 200 --interval-ms 5
"""

import argparse
import asyncio
import hashlib
import time

import orjson
import uvloop
from aiohttp import web

DIM = 8


def vector(text: str) -> list[float]:
    """A fixed 8-float vector per text (components in [-1, 1), 4 decimals)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [round(b / 128.0 - 1.0, 4) for b in digest[:DIM]]


def chat_chunk(i: int, content: str) -> bytes:
    chunk = {
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
        "model": "m", "choices": [{"index": 0, "delta": {"content": content},
                                   "finish_reason": None}],
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


FIXED = orjson.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 8, "completion_tokens": 1, "total_tokens": 9},
})


def build_app(chunks: int, interval: float) -> web.Application:
    async def chat(request: web.Request) -> web.StreamResponse:
        body = orjson.loads(await request.read())
        if not body.get("stream"):
            return web.Response(body=FIXED, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        t0 = time.monotonic()
        for i in range(chunks):
            delay = t0 + i * interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await resp.write(chat_chunk(i, f"ts{time.monotonic_ns()} "))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
                     "model": "m", "choices": [],
                     "usage": {"prompt_tokens": 8, "completion_tokens": chunks,
                               "total_tokens": 8 + chunks}}
            await resp.write(b"data: " + orjson.dumps(usage) + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def embeddings(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        data = [{"object": "embedding", "index": i, "embedding": vector(t)}
                for i, t in enumerate(texts)]
        return web.Response(body=orjson.dumps({
            "object": "list", "data": data, "model": body.get("model", "m"),
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}}),
            content_type="application/json")

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_get("/healthz", healthz)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    uvloop.install()
    web.run_app(build_app(args.chunks, args.interval_ms / 1000.0), host=host, port=int(port),
                access_log=None, print=None)


if __name__ == "__main__":
    main()
