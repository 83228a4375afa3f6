"""Semantic routing through the real gateway, with FakeEmbeddings and echo instances."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDictProxy
from tests.conftest import instance, route_config
from tests.fakes import FakeEmbeddings

from semproxy.admin.run import RunningGateway

CHAT = "/v1/chat/completions"
SEMANTIC_HEADERS = ("X-AI-Semantic-Route", "X-AI-Semantic-Scores", "X-AI-Semantic-Reason",
                    "X-AI-Semantic-Picked-Instance")
# Two everyday domains, five examples each as a user would write them (the in-process
# model's routes: threshold: auto and model: accurate).
BANKING = ["what is my account balance", "transfer money to savings", "why was my card declined",
           "report a fraudulent charge", "when is my credit card bill due"]
COOKING = ["how long do i boil an egg", "give me a lasagna recipe",
           "what can i use instead of butter", "how many calories are in rice",
           "suggest a quick vegetarian dinner"]


def remote_embeddings(url: str, **extra: Any) -> dict[str, Any]:
    """The embeddings block for a FakeEmbeddings server at `url`."""
    return {"provider": "openai-compatible", "override": {"endpoint": url}, "timeout": 300,
            "auth": {"header": {"Authorization": "Bearer emb-key"}}, **extra}


def specialists(**code: Any) -> list[dict[str, Any]]:
    """default (first, no examples: the catchall), code (axis 0), translate (axis 1)."""
    return [
        instance("default"),
        instance("code", examples=["write a python function", "fix my code"], **code),
        instance("translate", examples=["translate this into french"]),
    ]


def semantic_config(embeddings: dict[str, Any], instances: list[dict[str, Any]] | None = None,
                    **balancer: Any) -> dict[str, Any]:
    balancer = {"algorithm": "semantic", "threshold": 0.5, "expose_scores": True, **balancer}
    return route_config(instances if instances is not None else specialists(),
                        balancer=balancer, embeddings=embeddings)


@dataclass
class Answer:
    status: int
    headers: CIMultiDictProxy[str]
    body: dict[str, Any]
    seconds: float

    @property
    def served_by(self) -> str:
        content = self.body["choices"][0]["message"]["content"]
        assert isinstance(content, str) and content.startswith("[")
        return content[1:content.index("]")]

    def semantic_headers(self) -> dict[str, str]:
        return {h: self.headers[h] for h in SEMANTIC_HEADERS if h in self.headers}


async def ask(http: aiohttp.ClientSession, gw: RunningGateway, body: dict[str, Any],
              headers: dict[str, str] | None = None) -> Answer:
    started = time.perf_counter()
    async with http.post(f"{gw.url}{CHAT}", json=body, headers=headers) as resp:
        payload = await resp.json()
        return Answer(resp.status, resp.headers, payload, time.perf_counter() - started)


@pytest.fixture
async def embed() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings() as server:
        yield server
