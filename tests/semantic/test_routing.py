"""Which instance serves a prompt, and what the semantic headers say about it."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance
from tests.fakes import FakeEmbeddings

from semproxy.semantic.query import MAX_ROUTING_TEXT

from .conftest import ask, remote_embeddings, semantic_config, specialists


async def test_prompts_go_to_the_instance_whose_examples_they_resemble(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    code = await ask(http, gw, chat("please write code for me"))
    translate = await ask(http, gw, chat("translate hello to french"))
    assert (code.status, code.served_by) == (200, "code")
    assert code.headers["X-AI-Semantic-Route"] == "code"
    assert "X-AI-Semantic-Reason" not in code.headers
    assert (translate.status, translate.served_by) == (200, "translate")
    assert translate.headers["X-AI-Semantic-Route"] == "translate"


async def test_only_the_last_user_message_is_routed_on(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    body = {"model": "auto", "messages": [
        {"role": "system", "content": "you write python code"},
        {"role": "user", "content": "python code please"},
        {"role": "assistant", "content": "def f(): pass"},
        {"role": "user", "content": "now translate it to french"},
    ]}
    answer = await ask(http, gw, body)
    assert answer.served_by == "translate"
    assert embed.inputs_seen[-1] == "now translate it to french"


async def test_content_array_text_parts_are_joined_and_images_ignored(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    content = [
        {"type": "text", "text": "translate"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,python code"}},
        {"type": "text", "text": "this caption"},
    ]
    answer = await ask(http, gw, {"model": "auto", "messages": [
        {"role": "user", "content": content}]})
    assert answer.served_by == "translate"
    assert embed.inputs_seen[-1] == "translate this caption"


async def test_a_huge_prompt_is_capped_before_embedding(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    answer = await ask(http, gw, chat("python code " + "y" * 40_000))
    assert (answer.status, answer.served_by) == (200, "code")
    sent = embed.inputs_seen[-1]
    assert sent.startswith("python code ") and len(sent) <= MAX_ROUTING_TEXT == 16384


async def test_no_user_text_goes_to_the_catchall_without_embedding(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    calls = embed.calls
    answer = await ask(http, gw, {"model": "auto", "messages": [
        {"role": "system", "content": "write python code"}]})
    assert (answer.status, answer.served_by) == (200, "default")
    assert answer.headers["X-AI-Semantic-Reason"] == "no_user_text"
    assert "X-AI-Semantic-Scores" not in answer.headers
    assert "X-AI-Semantic-Route" not in answer.headers
    assert embed.calls == calls


async def test_below_threshold_falls_back_with_scores_and_a_warning(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    with caplog.at_level(logging.WARNING, logger="semproxy.routing"):
        answer = await ask(http, gw, chat("what is the weather tomorrow"))
    assert (answer.status, answer.served_by) == (200, "default")
    assert answer.headers["X-AI-Semantic-Route"] == "fallback"
    assert answer.headers["X-AI-Semantic-Reason"] == "below_threshold"
    assert answer.headers["X-AI-Semantic-Scores"] == "code:0.0000,translate:0.0000"
    warnings = [r.getMessage() for r in caplog.records if r.name == "semproxy.routing"]
    assert warnings == ["semantic routing: no instance cleared threshold "
                        "(scores: code:0.0000,translate:0.0000), falling back"]


async def test_the_fallback_warning_is_logged_even_when_scores_are_not_exposed(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url), expose_scores=False))
    with caplog.at_level(logging.WARNING, logger="semproxy.routing"):
        await ask(http, gw, chat("vec:0.3,0.4,0,0,0,0,0,0.866"))
    assert "no instance cleared threshold (scores: translate:0.4000,code:0.3000)" \
        in caplog.text


async def test_scores_header_lists_instances_with_examples_best_first_to_4_decimals(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    instances = [instance("default", catchall=True),
                 instance("code", examples=["code"]),
                 instance("translate", examples=["translate"])]
    gw = await gateway(semantic_config(remote_embeddings(embed.url), instances))
    first = await ask(http, gw, chat("vec:0.6,0.8"))
    assert first.headers["X-AI-Semantic-Scores"] == "translate:0.8000,code:0.6000"
    assert first.headers["X-AI-Semantic-Route"] == "translate"
    second = await ask(http, gw, chat("vec:0.96,0.28"))
    assert second.headers["X-AI-Semantic-Scores"] == "code:0.9600,translate:0.2800"
    # An unnormalised prompt is normalised: cosine, not dot product.
    third = await ask(http, gw, chat("vec:3,4"))
    assert third.headers["X-AI-Semantic-Scores"] == "translate:0.8000,code:0.6000"
    assert all("default" not in a.headers["X-AI-Semantic-Scores"]
               for a in (first, second, third))


async def test_an_instance_threshold_overrides_the_balancer_threshold(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    instances = [instance("default"),
                 instance("code", examples=["code"], threshold=0.5),
                 instance("translate", examples=["translate"])]
    gw = await gateway(semantic_config(remote_embeddings(embed.url), instances, threshold=0.9))
    # translate scores higher (0.8) but misses the balancer's 0.9; code clears its own 0.5.
    answer = await ask(http, gw, chat("vec:0.6,0.8"))
    assert answer.served_by == "code"
    assert answer.headers["X-AI-Semantic-Route"] == "code"
    assert answer.headers["X-AI-Semantic-Scores"] == "translate:0.8000,code:0.6000"


async def test_an_instance_threshold_can_also_be_stricter(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    instances = [instance("default"),
                 instance("code", examples=["code"], threshold=0.99),
                 instance("translate", examples=["translate"])]
    gw = await gateway(semantic_config(remote_embeddings(embed.url), instances, threshold=0.1))
    answer = await ask(http, gw, chat("vec:0.96,0.28"))
    assert answer.served_by == "translate"


async def test_no_semantic_headers_unless_scores_are_exposed(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    config = semantic_config(remote_embeddings(embed.url))
    del config["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]["expose_scores"]
    gw = await gateway(config)
    prompts = [chat("python code"), chat("weather"), chat("python EMB_500"),
               {"model": "auto", "messages": [{"role": "system", "content": "hi"}]}]
    answers = [await ask(http, gw, body) for body in prompts]
    assert [a.served_by for a in answers] == ["code", "default", "default", "default"]
    assert [a.semantic_headers() for a in answers] == [{}, {}, {}, {}]
    assert not any(h.startswith("X-AI-Semantic") for a in answers for h in a.headers)


async def test_the_first_instance_is_the_catchall_when_none_is_marked(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    instances = [instance("general"), *specialists()[1:], instance("spare")]
    gw = await gateway(semantic_config(remote_embeddings(embed.url), instances))
    answer = await ask(http, gw, chat("the weather"))
    assert answer.served_by == "general"
    assert answer.headers["X-AI-Semantic-Route"] == "fallback"


async def test_a_marked_catchall_wins_over_the_first_instance(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    instances = [instance("general"), *specialists()[1:], instance("spare", catchall=True)]
    gw = await gateway(semantic_config(remote_embeddings(embed.url), instances))
    answer = await ask(http, gw, chat("the weather"))
    assert answer.served_by == "spare"
