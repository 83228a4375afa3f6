"""The metrics' exposition is the one they gave before tallies.

A fixed sequence of requests goes through a real gateway whose observer is the
metrics plus a recorder of every moment; the moments are then replayed into
`DirectMetrics` (the metrics as they were: every moment updating the Prometheus
objects at once). Both scrapes must be the same, line for line, histograms
included: in memory, and in a multiprocess directory as `--workers` keeps them.
Only the values of `_created` samples (times of creation) are left out.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client import multiprocess as mp
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeEmbeddings, FakeLLM

from semproxy.config.loader import load_data
from semproxy.observability.fanout import MOMENTS, FanoutObserver
from semproxy.observability.metrics import Metrics
from semproxy.observability.observer import RequestObserver
from semproxy.server.app import Gateway, build_app

from .direct_metrics import DirectMetrics

ROOT = Path(__file__).resolve().parents[2]
Call = tuple[str, tuple[Any, ...]]


class Recorder(RequestObserver):
    """Every moment the request path reports, in order, with its arguments."""

    def __init__(self) -> None:
        self.calls: list[Call] = []


def _recording(moment: str) -> Any:
    def record(self: Recorder, *args: Any) -> None:
        # A lazy argument (the breakers' states) is read now, as a listener would.
        self.calls.append((moment, tuple(list(a) if isinstance(a, Iterable) and not
                                         isinstance(a, str | Mapping) else a for a in args)))
    return record


for _moment in MOMENTS:
    setattr(Recorder, _moment, _recording(_moment))


def replay(calls: list[Call], observer: RequestObserver) -> None:
    for moment, args in calls:
        getattr(observer, moment)(*args)


def config(llm_a: str, llm_b: str, embed: str) -> dict[str, Any]:
    embeddings = {"provider": "openai-compatible", "override": {"endpoint": embed}}
    rr = route_config([instance("a", llm_a), instance("b", llm_b)], uri="/v1/*", route_id="rr",
                      fallback_strategy="http_5xx",
                      balancer={"algorithm": "roundrobin", "shadow": {
                          "threshold": 0.5, "catchall": "a", "embeddings": embeddings,
                          "examples": {"b": ["translate into french"]}}})["routes"][0]
    sem = route_config(
        [instance("default", llm_a), instance("code", llm_b, examples=["write python code"])],
        uri="/sem/chat/completions", route_id="sem", embeddings=embeddings,
        balancer={"algorithm": "semantic", "threshold": 0.5})["routes"][0]
    return {"listen": "127.0.0.1:0", "routes": [rr, sem]}


async def post(http: aiohttp.ClientSession, url: str, body: Any) -> None:
    data = body if isinstance(body, bytes) else None
    async with http.post(url, data=data, json=None if data is not None else body) as resp:
        await resp.read()


async def requests(base: str) -> None:
    """The fixed sequence: answers whole and streamed, tokens, failovers, errors of every
    kind, three client protocols, semantic decisions (matched, repeated, below the
    threshold, embedding failed) and the shadow table's."""
    chat_url, sem_url = base + "/v1/chat/completions", base + "/sem/chat/completions"
    async with aiohttp.ClientSession() as http:
        for text in ("hello", "translate into french", "hello again"):
            await post(http, chat_url, chat(text))
        await post(http, chat_url, chat("status:503"))  # fails over, then relayed
        await post(http, chat_url, chat("status:400"))
        await post(http, chat_url, chat("chunks:3", stream=True,
                                        stream_options={"include_usage": True}))
        await post(http, base + "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [
            {"role": "user", "content": "hi"}]})
        await post(http, base + "/v1/responses", {"model": "m", "input": "hi"})
        await post(http, chat_url, b"{not json")
        await post(http, base + "/elsewhere", chat("hi"))
        for text in ("write python code", "write python code", "the weather today",
                     "python EMB_500"):
            await post(http, sem_url, chat(text))


async def drive(observer: RequestObserver, recorder: Recorder) -> Gateway:
    """Run the sequence through a gateway on a real socket; wait for its shadow decisions."""
    async with FakeLLM("a") as llm_a, FakeLLM("b") as llm_b, FakeEmbeddings() as embed:
        gateway = Gateway(load_data(config(llm_a.url, llm_b.url, embed.url)), observer)
        await gateway.start()
        runner = web.AppRunner(build_app(gateway))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            await requests(f"http://127.0.0.1:{runner.addresses[0][1]}")
            for _ in range(500):  # the shadow queue decides after each rr request
                if sum(m in ("on_shadow", "on_shadow_dropped") for m, _ in recorder.calls) >= 8:
                    break
                await asyncio.sleep(0.01)
        finally:
            await runner.cleanup()
    return gateway


def comparable(text: bytes) -> list[str]:
    # `_created` is when a series was created: kept, but not its value.
    return [re.sub(r"(_created\{.*\}|_created) \S+$", r"\1 T", line)
            for line in text.decode().splitlines()]


async def test_a_scrape_is_the_one_the_metrics_gave_before_tallies() -> None:
    metrics, recorder = Metrics(), Recorder()
    gateway = await drive(FanoutObserver(metrics, recorder), recorder)
    direct = DirectMetrics()
    replay(recorder.calls, direct)
    for target in (metrics, direct):
        gateway.report(target)  # type: ignore[arg-type]  # the same gauge moments
    scraped = generate_latest(metrics.registry)
    expected = generate_latest(direct.registry)
    assert comparable(scraped) == comparable(expected)
    # The sequence reached every family the request path counts.
    for family in ("requests_total", "request_duration_seconds_bucket", "tokens_total",
                   "upstream_duration_seconds_bucket", "time_to_first_token_seconds_bucket",
                   "upstream_attempts_total", "failovers_total", "semantic_decisions_total",
                   "embedding_duration_seconds_sum", "embedding_cache_total",
                   "semantic_decision_cache_total", "shadow_picks_total",
                   "shadow_agreement_total"):
        assert f"semproxy_{family}{{" in scraped.decode(), family


async def test_a_tally_counts_from_its_first_use_and_every_scrape_folds_the_rest() -> None:
    metrics = Metrics()
    metrics.on_response("r", "a", 200, 0.2, None, None, "chat")
    assert metrics.registry.get_sample_value(
        "semproxy_requests_total", {"route": "r", "instance": "a", "status": "200",
                                    "protocol": "chat"}) == 1
    metrics.on_response("r", "a", 200, 0.3, None, None, "chat")
    assert metrics.registry.get_sample_value(
        "semproxy_request_duration_seconds_count", {"route": "r"}) == 2
    assert metrics.registry.get_sample_value(
        "semproxy_request_duration_seconds_bucket", {"route": "r", "le": "0.25"}) == 1


# -- the multiprocess directory (`serve --workers N`) --------------------------------

def in_child(code: str, metrics_dir: Path, calls: Path) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    done = subprocess.run([sys.executable, "-c", code, str(calls)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def drive_with_folding(calls_file: str) -> None:
    """Child process, metrics in a multiprocess directory: the sequence, folded as a
    worker folds (every interval, and once more when it stops); the moments pickled."""
    async def main() -> None:
        metrics, recorder = Metrics(), Recorder()
        folder = asyncio.create_task(metrics.fold_every())
        await drive(FanoutObserver(metrics, recorder), recorder)
        folder.cancel()
        await asyncio.gather(folder, return_exceptions=True)
        Path(calls_file).write_bytes(pickle.dumps(recorder.calls))
    asyncio.run(main())


def replay_directly(calls_file: str) -> None:
    """Child process, metrics in another multiprocess directory: the same moments, each
    updating the Prometheus objects at once."""
    replay(pickle.loads(Path(calls_file).read_bytes()), DirectMetrics())


def test_the_multiprocess_files_hold_what_they_held_before_tallies(tmp_path: Path) -> None:
    folded, direct, calls = tmp_path / "folded", tmp_path / "direct", tmp_path / "calls"
    folded.mkdir()
    direct.mkdir()
    module = "tests.observability.test_exposition"
    in_child(f"import sys; from {module} import drive_with_folding as f; f(sys.argv[1])",
             folded, calls)
    in_child(f"import sys; from {module} import replay_directly as f; f(sys.argv[1])",
             direct, calls)
    texts = []
    for path in (folded, direct):
        registry = CollectorRegistry()
        mp.MultiProcessCollector(registry, path=str(path))  # type: ignore[no-untyped-call]
        texts.append(generate_latest(registry).decode())
    assert "semproxy_time_to_first_token_seconds_bucket{" in texts[0]
    assert 'protocol="responses",route="rr",status="200"} 1.0' in texts[0]
    assert sorted(texts[0].splitlines()) == sorted(texts[1].splitlines())
