"""Self-tests for the fake upstreams in tests/fakes."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from tests.fakes import FakeEmbeddings, FakeLLM


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-x", "messages": [{"role": "user", "content": text}], **extra}


async def read_events(resp: aiohttp.ClientResponse) -> list[str]:
    raw = await resp.text()
    return [block[len("data: ") :] for block in raw.split("\n\n") if block.startswith("data: ")]


async def test_chat_completion_and_recording(session: aiohttp.ClientSession) -> None:
    async with FakeLLM(name="a") as up:
        async with session.post(
            f"{up.url}/openai/deployments/d1/chat/completions?api-version=2024-06-01",
            json=chat("hello there"),
            headers={"api-key": "k1", "X-Trace": "t"},
        ) as resp:
            assert resp.status == 200
            assert resp.headers["X-Fake-Upstream"] == "a"
            body = await resp.json()
        async with session.get(f"{up.url}/health") as resp:
            assert resp.status == 200
            assert (await resp.json())["status"] == "ok"
    assert body["object"] == "chat.completion"
    assert body["model"] == "gpt-x"
    assert body["choices"][0]["message"] == {
        "role": "assistant",
        "content": "[a] gpt-x: hello there",
    }
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["total_tokens"] == 2 + 4
    rec = up.requests[0]
    assert (rec.method, rec.path) == ("POST", "/openai/deployments/d1/chat/completions")
    assert rec.query == {"api-version": "2024-06-01"}
    assert rec.headers["API-KEY"] == "k1"
    assert rec.json["messages"][0]["content"] == "hello there"
    assert orjson.loads(rec.body) == rec.json
    assert up.requests[1].method == "GET"
    assert up.calls == 1


async def test_status_steering_and_forced_failures(session: aiohttp.ClientSession) -> None:
    async with FakeLLM(name="b") as up:
        parts = [{"type": "text", "text": "please"}, {"type": "text", "text": "status:429"}]
        async with session.post(f"{up.url}/v1/chat/completions", json=chat(parts)) as resp:
            assert resp.status == 429
            err = (await resp.json())["error"]
            assert err["type"] == "rate_limit_error" and err["code"]
        up.fail_next = [502, 500]
        statuses = []
        for _ in range(3):
            async with session.post(f"{up.url}/v1/chat/completions", json=chat("x")) as resp:
                statuses.append(resp.status)
        assert statuses == [502, 500, 200]
        up.default_status = 503
        async with session.post(f"{up.url}/v1/chat/completions", json=chat("x")) as resp:
            assert resp.status == 503
        up.default_status = 200
        async with session.post(f"{up.url}/v1/chat/completions", json=chat("x garbage")) as resp:
            assert resp.status == 200
            with pytest.raises(orjson.JSONDecodeError):
                orjson.loads(await resp.read())


async def test_stream_with_usage(session: aiohttp.ClientSession) -> None:
    async with FakeLLM(name="s") as up:
        payload = chat("count chunks:3", stream=True, stream_options={"include_usage": True})
        async with session.post(f"{up.url}/v1/chat/completions", json=payload) as resp:
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            events = await read_events(resp)
    assert events[-1] == "[DONE]"
    chunks = [orjson.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content = [c["choices"][0]["delta"].get("content") for c in chunks[1:4]]
    assert "".join(content) == "[s] gpt-x: count chunks:3"
    assert chunks[4]["choices"][0]["finish_reason"] == "stop"
    assert chunks[5]["choices"] == [] and chunks[5]["usage"]["total_tokens"] > 0
    assert up.streams_completed == 1


async def test_breakstream_and_client_disconnect(session: aiohttp.ClientSession) -> None:
    async with FakeLLM() as up:
        payload = chat("go breakstream:2", stream=True)
        async with session.post(f"{up.url}/v1/chat/completions", json=payload) as resp:
            seen = []
            with pytest.raises(aiohttp.ClientPayloadError):
                async for line in resp.content:
                    seen.append(line)
        assert not any(b"[DONE]" in line for line in seen)
        assert up.streams_broken == 1 and up.stream_cancelled == 0

        payload = chat("go chunks:50 interval:20", stream=True)
        async with session.post(f"{up.url}/v1/chat/completions", json=payload) as resp:
            await resp.content.readline()
            resp.close()  # the client walks away mid-stream
        await up.wait_stream_cancelled(timeout=2)
        assert up.stream_cancelled == 1


async def test_slow_and_hang(session: aiohttp.ClientSession) -> None:
    async with FakeLLM() as up:
        loop = asyncio.get_running_loop()
        start = loop.time()
        async with session.post(f"{up.url}/v1/chat/completions", json=chat("slow:100")) as resp:
            assert resp.status == 200
        assert loop.time() - start >= 0.09
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await session.post(f"{up.url}/v1/chat/completions", json=chat("hang"))


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.hypot(*a) * math.hypot(*b))


async def test_embeddings_geometry(session: aiohttp.ClientSession) -> None:
    async with FakeEmbeddings() as emb:
        texts = [
            "write python code",
            "translate to French",
            "hello world",
            "python invoice",
            "vec:0.6,0.8",
        ]
        async with session.post(
            f"{emb.url}/v1/embeddings", json={"model": "e", "input": texts}
        ) as resp:
            body = await resp.json()
    assert body["object"] == "list" and body["model"] == "e"
    vecs = [d["embedding"] for d in body["data"]]
    assert [d["index"] for d in body["data"]] == [0, 1, 2, 3, 4]
    assert all(len(v) == 8 for v in vecs)
    assert vecs[0][0] == 1.0 and vecs[1][1] == 1.0 and vecs[2][7] == 1.0
    assert cosine(vecs[0], vecs[2]) == 0.0
    assert cosine(vecs[0], vecs[3]) == pytest.approx(math.sqrt(0.5))
    assert vecs[4] == [0.6, 0.8, 0, 0, 0, 0, 0, 0]
    assert emb.calls == 1 and emb.inputs_seen == texts


@pytest.mark.parametrize(
    ("word", "check"),
    [
        ("EMB_500", lambda status, raw: status == 500),
        ("EMB_NOTOBJ", lambda status, raw: orjson.loads(raw) == [1, 2]),
        ("EMB_NAN", lambda status, raw: b"[NaN," in raw),
        ("EMB_INF", lambda status, raw: b"[1e999," in raw),
        ("EMB_COUNT", lambda status, raw: len(orjson.loads(raw)["data"]) == 1),
        ("EMB_BADINDEX", lambda status, raw: orjson.loads(raw)["data"][1]["index"] == 99),
        ("EMB_DIM", lambda status, raw: len(orjson.loads(raw)["data"][1]["embedding"]) == 11),
        ("EMB_NULL", lambda status, raw: orjson.loads(raw)["data"][1]["embedding"] is None),
        ("EMB_EMPTY", lambda status, raw: orjson.loads(raw)["data"][1]["embedding"] == []),
        ("EMB_STR", lambda status, raw: orjson.loads(raw)["data"][1]["embedding"][0] == "x"),
        ("EMB_NOINDEX", lambda status, raw: "index" not in orjson.loads(raw)["data"][1]),
        ("EMB_NODATA", lambda status, raw: "data" not in orjson.loads(raw)),
        ("EMB_NOTJSON", lambda status, raw: status == 200 and not raw.startswith(b"{")),
    ],
)
async def test_embedding_magic_words(session: aiohttp.ClientSession, word: str, check: Any) -> None:
    async with FakeEmbeddings() as emb:
        payload = {"model": "e", "input": ["fine", f"broken {word}"]}
        async with session.post(f"{emb.url}/embeddings", json=payload) as resp:
            assert check(resp.status, await resp.read())


async def test_embeddings_hang_and_forced_status(session: aiohttp.ClientSession) -> None:
    async with FakeEmbeddings(dim=4, axes={"alpha": 0}) as emb:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await session.post(f"{emb.url}/embeddings", json={"input": "x EMB_HANG"})
        emb.fail_next = [429]
        async with session.post(f"{emb.url}/embeddings", json={"input": "alpha"}) as resp:
            assert resp.status == 429
        async with session.post(f"{emb.url}/embeddings", json={"input": "alpha"}) as resp:
            assert (await resp.json())["data"][0]["embedding"] == [1.0, 0.0, 0.0, 0.0]
    assert emb.calls == 3
