"""Fail-open: whatever goes wrong while embedding, the catchall serves with a 200.

One test per guard. A failed embedding yields no score, so neither
X-AI-Semantic-Route nor X-AI-Semantic-Scores is sent; the reason still is.
"""

from __future__ import annotations

import socket

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance
from tests.fakes import FakeEmbeddings

from .conftest import Answer, ask, remote_embeddings, semantic_config, specialists


def assert_failed_open(answer: Answer, reason: str) -> None:
    assert answer.status == 200
    assert answer.served_by == "default"
    assert answer.headers["X-AI-Semantic-Reason"] == reason
    assert "X-AI-Semantic-Scores" not in answer.headers
    assert "X-AI-Semantic-Route" not in answer.headers


# Each prompt is clearly about code, so only the fault can send it to the catchall.
BAD_ANSWERS = {
    "http_500": ("python code EMB_500", "embedding_error"),
    "body_not_an_object": ("python code EMB_NOTOBJ", "embedding_error"),
    "body_not_json": ("python code EMB_NOTJSON", "embedding_error"),
    "data_missing": ("python code EMB_NODATA", "embedding_error"),
    "wrong_count": ("python code EMB_COUNT", "embedding_error"),
    "null_vector": ("python code EMB_NULL", "embedding_error"),
    "empty_vector": ("python code EMB_EMPTY", "embedding_error"),
    "non_numeric_component": ("python code EMB_STR", "embedding_error"),
    "nan_component": ("python code EMB_NAN", "embedding_error"),
    "infinite_component": ("python code EMB_INF", "embedding_error"),
    "index_missing": ("python code EMB_NOINDEX", "embedding_error"),
    "index_out_of_range": ("python code EMB_BADINDEX", "embedding_error"),
    "dimension_mismatch": ("python code EMB_DIM", "dimension_mismatch"),
}


@pytest.mark.parametrize(("prompt", "reason"), BAD_ANSWERS.values(), ids=BAD_ANSWERS.keys())
async def test_a_bad_embedding_answer_is_served_by_the_catchall(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings,
    prompt: str, reason: str,
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    answer = await ask(http, gw, chat(prompt))
    assert embed.inputs_seen[-1] == prompt  # the fault really came from the endpoint
    assert_failed_open(answer, reason)
    healthy = await ask(http, gw, chat("python code"))
    assert healthy.served_by == "code"


async def test_an_unreachable_endpoint_is_served_by_the_catchall(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    gw = await gateway(semantic_config(remote_embeddings(f"http://127.0.0.1:{port}")))
    assert_failed_open(await ask(http, gw, chat("python code")), "embedding_error")


async def test_a_slow_endpoint_times_out_and_is_served_by_the_catchall(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))  # timeout: 300 ms
    answer = await ask(http, gw, chat("python code EMB_SLOW:1000"))
    assert_failed_open(answer, "embedding_timeout")
    assert 0.3 <= answer.seconds < 1.0


async def test_a_failing_reference_build_fails_every_request_open(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    instances = [*specialists(), instance("broken", examples=["EMB_500 examples"])]
    gw = await gateway(semantic_config(remote_embeddings(embed.url), instances))
    for prompt in ("python code", "translate to french"):
        assert_failed_open(await ask(http, gw, chat(prompt)), "embedding_error")


async def test_a_failed_reference_build_is_not_cached(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    embed.fail_next = [500, 500]  # the build at startup and the one of the first request
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    assert_failed_open(await ask(http, gw, chat("python code")), "embedding_error")
    assert embed.calls == 2
    answer = await ask(http, gw, chat("python code"))
    assert (answer.status, answer.served_by) == (200, "code")
    assert answer.headers["X-AI-Semantic-Route"] == "code"
    assert embed.calls == 4  # the reference batch again, then the prompt
