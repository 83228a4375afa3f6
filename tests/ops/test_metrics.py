"""GET /metrics on the admin listener: every family the issue lists, with its labels."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeAnthropic, FakeEmbeddings, FakeLLM

from .conftest import ADMIN_KEY, ROOT, ServeFactory, parse_metrics, sample, scrape, with_admin

CHAT = "/v1/chat/completions"
@pytest.fixture
async def upstreams() -> AsyncIterator[tuple[FakeEmbeddings, FakeLLM, FakeLLM, FakeLLM]]:
    async with FakeEmbeddings() as embed, FakeLLM("default") as default, \
            FakeLLM("code") as code, FakeLLM("translate") as translate:
        yield embed, default, code, translate


async def test_metrics_cover_requests_latency_tokens_semantic_and_config(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
    upstreams: tuple[FakeEmbeddings, FakeLLM, FakeLLM, FakeLLM],
) -> None:
    embed, default, code, translate = upstreams
    config = route_config(
        [instance("default", default.url),
         instance("code", code.url, examples=["write a python function"]),
         instance("translate", translate.url, examples=["translate into french"])],
        route_id="sem", fallback_strategy="http_5xx",
        balancer={"algorithm": "semantic", "threshold": 0.5},
        embeddings={"provider": "openai-compatible", "override": {"endpoint": embed.url}})
    served = await serve_file(with_admin(config))
    code.fail_next = [503]
    for text in ("python code", "python code", "what is the weather"):
        async with http.post(served.url + CHAT, json=chat(text)) as resp:
            assert resp.status == 200
    stream = chat("translate to french", stream=True, stream_options={"include_usage": True})
    async with http.post(served.url + CHAT, json=stream) as resp:
        assert resp.status == 200
        await resp.read()

    m = await scrape(http, served.admin)
    # The first "python code" failed over from code (503) to the next candidate.
    fallback_target = next(dict(ls)["target"] for (n, ls) in m
                           if n == "semproxy_failovers_total")
    assert sample(m, "semproxy_failovers_total", route="sem", source="code",
                 target=fallback_target, cause="http_503") == 1
    assert sample(m, "semproxy_requests_total", route="sem", instance="code", status="200") == 1
    assert sample(m, "semproxy_requests_total", route="sem", instance="default",
                 status="200") == 1 + (fallback_target == "default")
    assert sample(m, "semproxy_requests_total", route="sem", instance="translate",
                 status="200") == 1
    assert sample(m, "semproxy_request_duration_seconds_count", route="sem") == 4
    assert sample(m, "semproxy_upstream_duration_seconds_count", route="sem",
                 instance="code") == 2
    assert sample(m, "semproxy_upstream_attempts_total", route="sem", instance="code",
                 outcome="http_503") == 1
    # Time to first token is a stream measure: only the translate stream has one.
    assert sample(m, "semproxy_time_to_first_token_seconds_count", route="sem",
                 instance="translate") == 1
    assert not any(n.startswith("semproxy_time_to_first_token") and ("instance", "code") in ls
                   for (n, ls) in m)
    # Tokens come from upstream usage, the stream's final usage event included.
    assert sample(m, "semproxy_tokens_total", route="sem", instance="translate",
                 kind="completion") > 0
    assert sample(m, "semproxy_tokens_total", route="sem", instance="code", kind="total") > 0
    assert sample(m, "semproxy_semantic_decisions_total", route="sem", instance="code",
                 reason="matched") == 2
    assert sample(m, "semproxy_semantic_decisions_total", route="sem", instance="default",
                 reason="below_threshold") == 1
    # Three prompts were embedded; the repeated one was answered by the decision cache,
    # which embeds nothing and so adds no duration (issue 23: it used to add one).
    assert sample(m, "semproxy_embedding_duration_seconds_count", route="sem") == 3
    # The repeated prompt is answered by the decision cache: no embedding lookup at all.
    assert sample(m, "semproxy_semantic_decision_cache_total", route="sem", result="hit") == 1
    assert sample(m, "semproxy_semantic_decision_cache_total", route="sem", result="miss") == 3
    # The prompt-embedding cache saw the two examples and the three new prompts.
    assert sample(m, "semproxy_embedding_cache_total", result="miss") == 5
    assert not any(n == "semproxy_embedding_cache_total" and ("result", "hit") in ls
                   for (n, ls) in m)
    assert sample(m, "semproxy_embedding_breaker_state") == 0  # closed
    for name in ("default", "code", "translate"):
        assert sample(m, "semproxy_instance_healthy", route="sem", instance=name) == 1
    version = served.running.gateway.table.version
    assert sample(m, "semproxy_config_info", version=version) == 1
    assert sample(m, "semproxy_config_reload_failures_total") == 0
    assert sample(m, "semproxy_semantic_strong_shed_total") == 0  # no accurate route here
    assert sample(m, "semproxy_config_source_up") == 1


async def test_metrics_need_the_admin_key(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
) -> None:
    served = await serve_file(with_admin(route_config([instance("a")])))
    async with http.get(f"{served.admin}/metrics") as resp:
        assert resp.status == 401
    async with http.get(f"{served.url}/metrics") as resp:
        assert resp.status == 404  # not on the public listener


async def test_a_concurrent_decision_cache_hit_is_credited_to_its_own_request(
    serve_file: ServeFactory, http: aiohttp.ClientSession,
    upstreams: tuple[FakeEmbeddings, FakeLLM, FakeLLM, FakeLLM],
) -> None:
    # A slow new prompt is still being embedded when a repeated one is answered from
    # the decision cache: one hit and one miss, not two hits.
    embed, default, code, _ = upstreams
    config = route_config(
        [instance("default", default.url), instance("code", code.url, examples=["python"])],
        route_id="sem", balancer={"algorithm": "semantic", "threshold": 0.5},
        embeddings={"provider": "openai-compatible", "override": {"endpoint": embed.url}})
    served = await serve_file(with_admin(config))
    async with http.post(served.url + CHAT, json=chat("python code")) as resp:
        assert resp.status == 200

    async def post(text: str) -> None:
        async with http.post(served.url + CHAT, json=chat(text)) as resp:
            assert resp.status == 200

    slow = asyncio.create_task(post("python EMB_SLOW:300"))
    await asyncio.sleep(0.1)
    await post("python code")
    await slow
    m = await scrape(http, served.admin)
    assert sample(m, "semproxy_semantic_decision_cache_total", route="sem", result="hit") == 1
    assert sample(m, "semproxy_semantic_decision_cache_total", route="sem", result="miss") == 2


async def test_tokens_of_a_streamed_anthropic_answer_count_input_and_output(
        serve_file: ServeFactory, http: aiohttp.ClientSession) -> None:
    # A native Messages stream gives its input count inside `message_start`'s message and
    # its output count in `message_delta`: both reach the token metrics, whichever client
    # protocol asked.
    async with FakeAnthropic("claude") as claude:
        inst = {"name": "c", "provider": "anthropic-messages", "weight": 1,
                "options": {"model": "claude-x"}, "override": {"endpoint": claude.url}}
        served = await serve_file(with_admin(route_config([inst], route_id="na", uri="/v1/*")))
        asks = (("/v1/messages", {"model": "m", "max_tokens": 9, "stream": True,
                                  "messages": [{"role": "user", "content": "hi"}]}),
                (CHAT, chat("hello", stream=True)))
        for path, body in asks:
            async with http.post(served.url + path, json=body) as resp:
                assert resp.status == 200
                await resp.read()
        m = await scrape(http, served.admin)
    assert sample(m, "semproxy_tokens_total", route="na", instance="c", kind="prompt") == 14
    assert sample(m, "semproxy_tokens_total", route="na", instance="c", kind="completion") == 6


async def test_decision_cache_hits_add_no_embedding_duration(
        serve_file: ServeFactory, http: aiohttp.ClientSession) -> None:
    # The histogram times embedding and scoring a prompt; a repeated prompt is answered
    # by the decision cache, which does neither, so only the first one is observed.
    config = route_config(
        [instance("general", catchall=True), instance("code", examples=["write python"])],
        route_id="sem", balancer={"algorithm": "semantic", "threshold": 0.5},
        embeddings={"provider": "local"})
    served = await serve_file(with_admin(config))
    for _ in range(3):
        async with http.post(served.url + CHAT, json=chat("write a python function")) as resp:
            assert resp.status == 200
    m = await scrape(http, served.admin)
    assert sample(m, "semproxy_semantic_decision_cache_total", route="sem", result="hit") == 2
    assert sample(m, "semproxy_embedding_duration_seconds_count", route="sem") == 1


def documented_metrics(page: str) -> dict[str, set[str]]:
    """The metrics tables of an operations page and of the feature pages its table
    points to for a family (`semproxy_cache_*`: cache.md): name -> label names."""
    pages = [page, page.replace("operations.md", "cache.md")]
    found: dict[str, set[str]] = {}
    for path in pages:
        text = (ROOT / path).read_text(encoding="utf-8")
        rows = re.findall(r"^\| ((?:`semproxy_[a-z_]+`(?:, |、)?)+) \| [a-z]+ \|"
                          r"\s*([a-z_, ]*?)\s*\|", text, re.M)
        for names, labels in rows:
            for name in re.findall(r"`(semproxy_[a-z_]+)`", names):
                found[name] = {label.strip() for label in labels.split(",") if label.strip()}
    return found


@pytest.mark.parametrize("page", ["docs/en/operations.md", "docs/zh/operations.md"])
async def test_every_metric_and_label_the_gateway_exports_is_documented(
    serve_file: ServeFactory, http: aiohttp.ClientSession, page: str,
) -> None:
    served = await serve_file(with_admin(route_config([instance("echo")])))
    async with http.post(served.url + CHAT, json=chat("hi")) as resp:
        assert resp.status == 200
    async with http.get(f"{served.admin}/metrics", headers={"X-API-KEY": ADMIN_KEY}) as resp:
        exposition = await resp.text()
    documented = documented_metrics(page)
    # A counter's `_created` twin is prometheus_client's, not a metric of its own.
    exported = {name for name in re.findall(r"^# HELP (semproxy_[a-z_]+) ", exposition, re.M)
                if not name.endswith("_created")}
    assert exported - set(documented) == set()
    for (name, labels), _ in parse_metrics(exposition).items():
        family = re.sub(r"_(bucket|count|sum)$", "", name)
        if family in documented:
            assert {k for k, _ in labels} - {"le"} <= documented[family], (name, labels)
