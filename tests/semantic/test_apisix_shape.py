"""The APISIX 3.18 spelling (`semantic_opts`) routes exactly like the native one."""

from __future__ import annotations

import aiohttp
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeEmbeddings

from .conftest import ask, remote_embeddings, semantic_config

PROMPTS = ["python code", "translate into french", "the weather", "vec:0.6,0.8",
           "vec:0.96,0.28", "vec:0.3,0.4,0,0,0,0,0,0.866", "python EMB_500"]


def instances() -> list[dict[str, object]]:
    return [instance("code", examples=["write a python function"]),
            instance("translate", examples=["translate this into french"]),
            instance("default")]


async def test_semantic_opts_picks_like_the_native_shape(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    native_instances = instances()
    native_instances[2]["catchall"] = True
    native = await gateway(semantic_config(remote_embeddings(embed.url), native_instances))
    apisix = await gateway(route_config(
        instances(), balancer={"algorithm": "semantic"},
        semantic_opts={"threshold": 0.5, "debugging": True, "fallback": "default",
                       "embeddings": remote_embeddings(embed.url)}))
    for prompt in PROMPTS:
        ours = await ask(http, native, chat(prompt))
        theirs = await ask(http, apisix, chat(prompt))
        assert (theirs.status, theirs.served_by) == (ours.status, ours.served_by), prompt
        for header in ("X-AI-Semantic-Route", "X-AI-Semantic-Scores", "X-AI-Semantic-Reason"):
            assert theirs.headers.get(header) == ours.headers.get(header), (prompt, header)
        assert "X-AI-Semantic-Picked-Instance" not in ours.headers
        if "X-AI-Semantic-Scores" in theirs.headers:
            assert theirs.headers["X-AI-Semantic-Picked-Instance"] == theirs.served_by
        else:
            assert "X-AI-Semantic-Picked-Instance" not in theirs.headers
    picks = [(await ask(http, apisix, chat(p))).served_by for p in PROMPTS]
    assert picks == ["code", "translate", "default", "translate", "code", "default", "default"]


async def test_semantic_opts_without_debugging_sends_no_semantic_headers(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(route_config(
        instances(), balancer={"algorithm": "semantic"},
        semantic_opts={"threshold": 0.5, "fallback": "default",
                       "embeddings": remote_embeddings(embed.url)}))
    code, other = await ask(http, gw, chat("python code")), await ask(http, gw, chat("hi"))
    assert (code.served_by, other.served_by) == ("code", "default")
    assert code.semantic_headers() == other.semantic_headers() == {}
