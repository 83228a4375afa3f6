"""Prompt vector cache and reference invalidation, seen from the embeddings endpoint."""

from __future__ import annotations

import asyncio

import aiohttp
from tests.conftest import GatewayFactory, chat, instance
from tests.fakes import FakeEmbeddings

from semproxy.config.loader import load_data

from .conftest import ask, remote_embeddings, semantic_config

EXAMPLES = ["write a python function", "fix my code", "translate this into french"]


async def test_the_references_are_embedded_in_one_batch_at_startup(
    gateway: GatewayFactory, embed: FakeEmbeddings
) -> None:
    await gateway(semantic_config(remote_embeddings(embed.url)))
    assert [r.json["input"] for r in embed.posts] == [EXAMPLES]


async def test_a_repeated_prompt_is_embedded_once(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    answers = [await ask(http, gw, chat("python code please")) for _ in range(3)]
    assert [a.served_by for a in answers] == ["code"] * 3
    assert embed.inputs_seen.count("python code please") == 1
    assert embed.calls == 2  # references, then the prompt once


async def test_concurrent_identical_prompts_share_one_embedding_call(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    prompt = "python code EMB_SLOW:100"  # slow enough that all five overlap
    answers = await asyncio.gather(*(ask(http, gw, chat(prompt)) for _ in range(5)))
    assert [a.served_by for a in answers] == ["code"] * 5
    assert embed.inputs_seen.count(prompt) == 1


async def test_a_new_config_version_re_embeds_its_references_at_once(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    assert (await ask(http, gw, chat("python code"))).served_by == "code"
    old_version = gw.gateway.table.version
    swapped = [instance("default"),
               instance("code", examples=["summarize this report"]),
               instance("translate", examples=["send the invoice"])]
    embed.reset()
    await gw.gateway.apply(load_data(semantic_config(remote_embeddings(embed.url), swapped), {}))
    assert gw.gateway.table.version != old_version
    # Built before the swap, so the first request on the new version pays nothing.
    assert [r.json["input"] for r in embed.posts] == [["summarize this report",
                                                       "send the invoice"]]
    summary = await ask(http, gw, chat("a summary please"))
    billing = await ask(http, gw, chat("billing question"))
    old_intent = await ask(http, gw, chat("python code"))
    assert (summary.served_by, billing.served_by, old_intent.served_by) == \
        ("code", "translate", "default")
    assert old_intent.headers["X-AI-Semantic-Scores"] == "code:0.0000,translate:0.0000"


async def test_references_rebuild_with_the_new_model_after_a_dimension_change(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    assert (await ask(http, gw, chat("python code"))).served_by == "code"
    embed.dim = 12  # the model behind the same name and endpoint changed
    first = await ask(http, gw, chat("python function"))
    assert first.served_by == "default"
    assert first.headers["X-AI-Semantic-Reason"] == "dimension_mismatch"
    # The stale references were dropped, and are rebuilt from the endpoint
    # (not from cached vectors of the old model), so routing recovers.
    second = await ask(http, gw, chat("translate to french"))
    assert (second.served_by, second.headers["X-AI-Semantic-Route"]) == \
        ("translate", "translate")
    third = await ask(http, gw, chat("python code"))
    assert third.served_by == "code"
