"""The embeddings call keeps one deadline for the whole exchange (routing waits on it)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from tests.fakes import FakeEmbeddings

from semproxy.config.schema import Auth
from semproxy.embeddings.remote import RemoteEmbedder
from semproxy.errors import EmbeddingError
from semproxy.providers.openai_compatible import OpenAICompatibleProvider
from semproxy.transport.http import AiohttpTransport
from semproxy.transport.target import NetPolicy


@pytest.fixture
async def clients() -> AsyncIterator[AiohttpTransport]:
    http = AiohttpTransport()
    yield http
    await http.aclose()


async def test_embed_returns_one_vector_per_text(clients: AiohttpTransport) -> None:
    async with FakeEmbeddings(dim=4, axes={"code": 0}) as emb:
        provider = OpenAICompatibleProvider(instance="embeddings")
        target = provider.embeddings_target(emb.url, Auth(), "m", NetPolicy(timeout_s=2))
        vectors = await RemoteEmbedder(target, clients).embed(["code", "weather"])
    assert vectors.shape == (2, 4)
    assert emb.last_request.path == "/v1/embeddings"
    assert emb.last_request.json["model"] == "m"


async def test_embed_on_a_hanging_endpoint_fails_with_a_timeout_reason(
    clients: AiohttpTransport,
) -> None:
    async with FakeEmbeddings() as emb:
        provider = OpenAICompatibleProvider(instance="embeddings")
        target = provider.embeddings_target(emb.url, Auth(), None, NetPolicy(timeout_s=0.3))
        started = time.monotonic()
        with pytest.raises(EmbeddingError) as info:
            await RemoteEmbedder(target, clients).embed(["EMB_HANG"])
    assert info.value.reason == "embedding_timeout"
    assert time.monotonic() - started < 1.0
