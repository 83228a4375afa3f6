"""Cluster mode: replicas load routes from etcd, follow changes, and survive etcd outages."""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.config.etcd import EtcdClient, EtcdCompacted
from semproxy.config.source import EtcdSource

from .conftest import ADMIN_KEY, EtcdServer, cli_env, eventually, run_cli, sample, scrape


@dataclass
class Replica:
    proc: asyncio.subprocess.Process
    url: str
    admin: str


async def start_replica(etcd: EtcdServer, prefix: str) -> Replica:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "semproxy", "--log-level", "WARNING", "serve",
        "--etcd", etcd.url, "--prefix", prefix, "--listen", "127.0.0.1:0",
        env=cli_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert proc.stdout is not None
    urls = {}
    async with asyncio.timeout(10):
        while len(urls) < 2:
            line = (await proc.stdout.readline()).decode()
            assert line, "the replica exited before it listened"
            kind = "admin" if line.startswith("semproxy admin on ") else "public"
            urls[kind] = line.split(" on ")[1].split()[0]
    return Replica(proc, urls["public"], urls["admin"])


@pytest.fixture
async def replicas(etcd: EtcdServer) -> AsyncIterator[Callable[[str, int], Awaitable[
        list[Replica]]]]:
    started: list[Replica] = []

    async def factory(prefix: str, count: int) -> list[Replica]:
        found = await asyncio.gather(*(start_replica(etcd, prefix) for _ in range(count)))
        started.extend(found)
        return list(found)

    yield factory
    for replica in started:
        replica.proc.send_signal(signal.SIGTERM)
    for replica in started:
        assert await asyncio.wait_for(replica.proc.wait(), 15) == 0


def cluster_config(llm: FakeLLM) -> dict[str, Any]:
    # The admin listener on port 0: every replica on this host gets its own.
    return {**route_config([instance(llm.name, llm.url)]),
            "admin": {"listen": "127.0.0.1:0", "key": ADMIN_KEY}}


async def push(etcd: EtcdServer, prefix: str, config: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "pushed.yaml"
    path.write_text(yaml.safe_dump(config))
    done = await asyncio.to_thread(run_cli, "config", "push", str(path), "--etcd", etcd.url,
                                   "--prefix", prefix)
    assert done.returncode == 0, done.stderr


async def all_served_by(http: aiohttp.ClientSession, replicas: list[Replica], name: str
                        ) -> bool:
    for replica in replicas:
        async with http.post(replica.url + "/v1/chat/completions", json=chat("hi")) as resp:
            if resp.status != 200:
                return False
            content = (await resp.json())["choices"][0]["message"]["content"]
            if not content.startswith(f"[{name}]"):
                return False
    return True


async def source_states(http: aiohttp.ClientSession, replicas: list[Replica]) -> set[str]:
    states = set()
    for replica in replicas:
        async with http.get(replica.url + "/healthz") as resp:
            assert resp.status == 200
            states.add((await resp.json())["config_source"])
    return states


async def test_replicas_follow_etcd_and_keep_serving_through_an_outage(
    etcd: EtcdServer, replicas: Callable[[str, int], Awaitable[list[Replica]]],
    http: aiohttp.ClientSession, tmp_path: Path,
) -> None:
    prefix = f"/semproxy-{uuid.uuid4().hex[:8]}"
    async with FakeLLM("a") as a, FakeLLM("b") as b:
        await push(etcd, prefix, cluster_config(a), tmp_path)
        both = await replicas(prefix, 2)
        assert await all_served_by(http, both, "a")

        await push(etcd, prefix, cluster_config(b), tmp_path)
        assert await eventually(lambda: all_served_by(http, both, "b"), within=1.0) < 1.0

        etcd.stop()
        await eventually(lambda: _all_unavailable(http, both), within=5.0)
        assert await all_served_by(http, both, "b")  # the last good version serves on
        for replica in both:
            assert sample(await scrape(http, replica.admin), "semproxy_config_source_up") == 0

        etcd.start()
        await eventually(lambda: _all_ok(http, both), within=5.0)
        await push(etcd, prefix, cluster_config(a), tmp_path)
        assert await eventually(lambda: all_served_by(http, both, "a"), within=1.0) < 1.0
        for replica in both:
            assert sample(await scrape(http, replica.admin), "semproxy_config_source_up") == 1


async def _all_unavailable(http: aiohttp.ClientSession, replicas: list[Replica]) -> bool:
    return await source_states(http, replicas) == {"unavailable"}


async def _all_ok(http: aiohttp.ClientSession, replicas: list[Replica]) -> bool:
    return await source_states(http, replicas) == {"ok"}


async def test_replicas_start_before_any_config_and_pick_up_the_first_push(
    etcd: EtcdServer, replicas: Callable[[str, int], Awaitable[list[Replica]]],
    http: aiohttp.ClientSession, tmp_path: Path,
) -> None:
    prefix = f"/semproxy-{uuid.uuid4().hex[:8]}"
    global_doc = {"admin": {"listen": "127.0.0.1:0", "key": ADMIN_KEY}}
    client = EtcdClient(etcd.url)
    try:
        await client.put(f"{prefix}/global", yaml.safe_dump(global_doc))
    finally:
        await client.aclose()
    async with FakeLLM("a") as a:
        both = await replicas(prefix, 2)
        async with http.post(both[0].url + "/v1/chat/completions", json=chat("hi")) as resp:
            assert resp.status == 404  # no routes yet
        await push(etcd, prefix, cluster_config(a), tmp_path)
        assert await eventually(lambda: all_served_by(http, both, "a"), within=1.0) < 1.0


async def test_admin_writes_go_to_etcd_and_reach_every_replica(
    etcd: EtcdServer, replicas: Callable[[str, int], Awaitable[list[Replica]]],
    http: aiohttp.ClientSession, tmp_path: Path,
) -> None:
    prefix = f"/semproxy-{uuid.uuid4().hex[:8]}"
    async with FakeLLM("a") as a, FakeLLM("b") as b:
        await push(etcd, prefix, cluster_config(a), tmp_path)
        both = await replicas(prefix, 2)
        route = {"uri": "/v1/chat/completions",
                 "plugins": {"ai-proxy-multi": {"instances": [instance("b", b.url)]}}}
        async with http.put(both[0].admin + "/admin/routes/r1", json=route,
                            headers={"X-API-KEY": ADMIN_KEY}) as resp:
            assert resp.status == 200
        assert await eventually(lambda: all_served_by(http, both, "b"), within=1.0) < 1.0


async def test_a_compacted_history_makes_the_source_reload_everything(
    etcd: EtcdServer, http: aiohttp.ClientSession,
) -> None:
    prefix = f"/semproxy-{uuid.uuid4().hex[:8]}"
    source = EtcdSource(etcd.url, prefix)
    try:
        await source.push(route_config([instance("a")]))
        await source.load()
        stale = source._revision
        await source.push(route_config([instance("b")]))
        revision = await source.push(route_config([instance("c")]))
        async with http.post(f"{etcd.url}/v3/kv/compaction",
                             json={"revision": revision}) as resp:
            assert resp.status == 200
        with pytest.raises(EtcdCompacted):
            async for _ in source.client.watch(prefix + "/", stale + 1):
                pass
        changes = source.changes()
        await anext(changes)  # the compacted watch asks for a full read
        config = await source.load()
        assert [i.name for i in config.routes[0].instances] == ["c"]
        assert source._revision >= revision
        await changes.aclose()
    finally:
        await source.aclose()


async def test_concurrent_admin_writes_on_two_replicas_are_all_kept(
    etcd: EtcdServer, replicas: Callable[[str, int], Awaitable[list[Replica]]],
    http: aiohttp.ClientSession, tmp_path: Path,
) -> None:
    prefix = f"/semproxy-{uuid.uuid4().hex[:8]}"
    async with FakeLLM("a") as a:
        await push(etcd, prefix, cluster_config(a), tmp_path)
        both = await replicas(prefix, 2)

        async def put(i: int) -> int:
            route = {"uri": f"/v1/r{i}", "plugins": {"ai-proxy-multi": {
                "instances": [instance("a", a.url)]}}}
            async with http.put(f"{both[i % 2].admin}/admin/routes/r{i}", json=route,
                                headers={"X-API-KEY": ADMIN_KEY}) as resp:
                return resp.status

        assert await asyncio.gather(*(put(i) for i in range(16))) == [200] * 16
    client = EtcdClient(etcd.url)
    try:
        kvs, _ = await client.range_prefix(f"{prefix}/routes/")
    finally:
        await client.aclose()
    assert sorted(kv.key.rsplit("/", 1)[1] for kv in kvs) == sorted(f"r{i}" for i in range(16))
