"""Prompts built to make routing expensive: 4-byte characters, scripts without spaces,
a flood of long distinct prompts. Each costs about what an English prompt costs."""

from __future__ import annotations

import random
import statistics
import time
import tracemalloc
from collections.abc import Sequence

import numpy as np
from tests.conftest import instance, route_config

from semproxy.config.loader import load_data
from semproxy.embeddings.local import embed_with, load_model
from semproxy.semantic.query import MAX_ROUTING_TEXT, RoutingInput, prompt_input, routing_text
from semproxy.semantic.router import open_router

EMOJI = "😀🎉🔥👍🚀🙂😇🥰"
CJK = "我们的路由器在这里你好世界中文测试数据天地"


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def test_the_routing_text_is_capped_in_bytes_at_a_character_boundary() -> None:
    rng = random.Random(1)
    for alphabet in (EMOJI, CJK, "é", "abc "):
        text = "".join(rng.choices(alphabet, k=40_000))
        routed = prompt_input(text).text
        assert MAX_ROUTING_TEXT - 4 < _utf8(routed) <= MAX_ROUTING_TEXT, alphabet
        assert text.startswith(routed)  # a prefix: no character cut in half
        chat = {"messages": [{"role": "user", "content": text}]}
        assert routing_text(chat) == routed
    assert prompt_input("short prompt").text == "short prompt"


def _median_ms(text: str) -> float:
    model = load_model()
    embed_with(model, [text])
    runs = []
    for _ in range(7):
        started = time.perf_counter()
        embed_with(model, [text])
        runs.append(time.perf_counter() - started)
    return statistics.median(runs) * 1e3


def test_emoji_and_cjk_prompts_cost_about_what_english_ones_do() -> None:
    # Tokenizing costs per byte-level token. The longest English prompt routed is
    # 16,384 characters; 16,384 emoji took 5.4x its time, 16,384 CJK characters 2.8x
    # (the documented figure is for English). Cut to the same 16 KiB they cost 1.0-1.4x.
    rng = random.Random(2)
    english = " ".join(rng.choices(["route", "this", "prompt", "to", "the", "cheapest",
                                    "model", "that", "can", "answer", "it", "well"],
                                   k=4000))
    base = _median_ms(prompt_input(english).text)
    for alphabet in (EMOJI, CJK):
        costly = _median_ms(prompt_input("".join(rng.choices(alphabet, k=16_384))).text)
        assert costly < 2.5 * base, (alphabet, costly, base)


class CountingEmbedder:
    """Two-dimensional vectors: 'x' in the text points one way, anything else the other."""

    fingerprint = "test:counting"

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "x" in t else [0.0, 1.0] for t in texts], np.float32)

    async def aclose(self) -> None:
        pass


async def test_long_prompts_take_little_room_in_the_decision_cache() -> None:
    # 4,096 distinct prompts of 16,384 4-byte characters kept +330 MB as cache keys.
    config = load_data(route_config(
        [instance("ex", examples=["x"]), instance("why", examples=["y"]),
         instance("default", catchall=True)],
        balancer={"algorithm": "semantic", "threshold": 0.5},
        embeddings={"provider": "local"}), {})
    router = open_router(config.routes[0], CountingEmbedder())  # type: ignore[arg-type]
    bodies = [f"{n} " + "🙂" * 16_384 for n in range(300)]
    await router.route(RoutingInput("warm up"))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for body in bodies:  # each request's text is its own object, as in the gateway
            assert (await router.route(prompt_input(body))).cached is False
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 2 << 20, held  # the texts alone would be 300 x 16 KiB or more
    assert (await router.route(prompt_input(bodies[7]))).cached is True  # found by digest
    assert (await router.route(prompt_input("8 " + "🙂" * 16_384))).cached is True
