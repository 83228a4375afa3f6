"""Admin writes to a config file: serialised, atomic, never lost, comments kept.

Each write is a change applied to the file as it is when the write holds the
lock, so concurrent writes (in one worker, in two gateways on one file, in the
workers of `serve --workers 2`) all reach it; the temporary file is never a
predictable name; a symlinked config stays a symlink.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from tests.conftest import instance, route_config
from tests.server.playground_env import ADMIN_KEY as PLAYGROUND_KEY
from tests.server.playground_env import quickstart_file, start_playground

from semproxy.admin.run import RunningGateway, start
from semproxy.config.loader import load_file
from semproxy.config.source import FileSource

from .conftest import ADMIN_KEY, cli_env, free_port, with_admin

WRITES = 16


@pytest.fixture
async def quickstart(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    running = await start_playground(tmp_path)
    yield running
    await running.close()


def comments(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("#")]


def code_examples(path: Path) -> list[str]:
    doc = yaml.safe_load(path.read_text())
    examples: list[str] = doc["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0][
        "examples"]
    return examples


async def add_example(http: aiohttp.ClientSession, admin: str, text: str
                      ) -> tuple[int, dict[str, Any]]:
    async with http.post(f"{admin}/admin/routes/auto/examples",
                         json={"instance": "code", "examples": [text]},
                         headers={"X-API-KEY": PLAYGROUND_KEY}) as resp:
        return resp.status, await resp.json()


async def put_route(http: aiohttp.ClientSession, admin: str, route_id: str, uri: str,
                    key: str = ADMIN_KEY) -> tuple[int, dict[str, Any]]:
    route = route_config([instance("e")], uri=uri)["routes"][0]
    async with http.put(f"{admin}/admin/routes/{route_id}", json=route,
                        headers={"X-API-KEY": key}) as resp:
        return resp.status, await resp.json()


async def test_concurrent_example_adds_all_reach_the_file_with_its_comments(
    quickstart: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path,
) -> None:
    path = tmp_path / "quickstart.yaml"
    before = path.read_text()
    assert quickstart.admin_url is not None
    texts = [f"review pull request number {i} for style" for i in range(WRITES)]
    answers = await asyncio.gather(*(add_example(http, quickstart.admin_url, t) for t in texts))
    assert [status for status, _ in answers] == [200] * WRITES, answers
    on_disk = code_examples(path)
    assert sorted(on_disk[10:]) == sorted(texts) and len(on_disk) == 10 + WRITES
    assert comments(path.read_text()) == comments(before)
    live = quickstart.gateway.config.routes[0].instances[0]
    assert len(live.examples) == 10 + WRITES


async def test_two_gateways_on_one_file_lose_no_write(
    tmp_path: Path, http: aiohttp.ClientSession,
) -> None:
    path = tmp_path / "semproxy.yaml"
    path.write_text("# two gateways share this file\n" + yaml.safe_dump(
        with_admin(route_config([instance("a")])), sort_keys=False))
    gateways = [await start(load_file(path), "127.0.0.1:0",
                            source=FileSource(path, interval_s=0.05)) for _ in range(2)]
    try:
        admins = [gw.admin_url for gw in gateways]
        assert None not in admins
        answers = await asyncio.gather(*(
            put_route(http, str(admins[i % 2]), f"r{i}", f"/v1/r{i}") for i in range(WRITES)))
        assert [status for status, _ in answers] == [200] * WRITES, answers
        ids = [r["id"] for r in yaml.safe_load(path.read_text())["routes"]]
        assert sorted(ids) == sorted(f"r{i}" for i in range(WRITES))  # r1 replaced in place
        assert path.read_text().startswith("# two gateways share this file\n")
    finally:
        for gw in gateways:
            await gw.close()


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    admin_port = free_port()
    config = {**route_config([instance("a")]),
              "admin": {"listen": f"127.0.0.1:{admin_port}", "key": ADMIN_KEY}}
    path = tmp_path / "semproxy.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.Popen(
        [sys.executable, "-m", "semproxy", "--log-level", "WARNING", "serve", "--config",
         str(path), "--workers", "2", "--listen", f"127.0.0.1:{free_port()}"],
        env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        ready = [proc.stdout.readline() for _ in range(4)]  # listening + admin, per worker
        assert sum("semproxy admin on" in line for line in ready) == 2, ready
        yield f"http://127.0.0.1:{admin_port}", path
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        if proc.stdout is not None:
            proc.stdout.close()


async def test_the_workers_of_one_gateway_lose_no_write(two_workers: tuple[str, Path]) -> None:
    admin, path = two_workers
    # A connection per request, so the kernel spreads the writes over both workers.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        answers = await asyncio.gather(*(put_route(http, admin, f"r{i}", f"/v1/r{i}")
                                         for i in range(WRITES)))
    assert [status for status, _ in answers] == [200] * WRITES, answers
    ids = [r["id"] for r in yaml.safe_load(path.read_text())["routes"]]
    assert sorted(ids) == sorted(f"r{i}" for i in range(WRITES))  # r1 replaced in place


async def test_a_planted_temporary_file_is_never_written_through(
    quickstart: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("victim\n")
    victim.chmod(0o600)
    for name in (".quickstart.yaml.apply.tmp", ".quickstart.yaml.tmp"):
        (tmp_path / name).symlink_to(victim)
    assert quickstart.admin_url is not None
    status, body = await add_example(http, quickstart.admin_url, "lint my shell script")
    assert status == 200, body
    assert victim.read_text() == "victim\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert "lint my shell script" in code_examples(tmp_path / "quickstart.yaml")
    leftovers = {p.name for p in tmp_path.iterdir()} - {
        "victim.txt", "quickstart.yaml", ".quickstart.yaml.apply.tmp", ".quickstart.yaml.tmp"}
    assert leftovers == set()


async def test_a_written_config_keeps_its_permission_bits(
    tmp_path: Path, http: aiohttp.ClientSession,
) -> None:
    path = quickstart_file(tmp_path)
    path.chmod(0o600)  # it holds the admin key
    running = await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
    try:
        assert running.admin_url is not None
        status, body = await add_example(http, running.admin_url, "profile this function")
        assert status == 200, body
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        status, body = await put_route(http, running.admin_url, "batch", "/batch/*",
                                       PLAYGROUND_KEY)
        assert status == 200, body
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        await running.close()


async def test_a_symlinked_config_stays_a_symlink_and_its_target_is_written(
    tmp_path: Path, http: aiohttp.ClientSession,
) -> None:
    # The layout of a Kubernetes ConfigMap volume: two levels of symlinks.
    version = tmp_path / "..2026_01_01_00_00_00.1"
    version.mkdir()
    target = quickstart_file(version)
    (tmp_path / "..data").symlink_to(version.name)
    link = tmp_path / "quickstart.yaml"
    link.symlink_to("..data/quickstart.yaml")
    running = await start(load_file(link), "127.0.0.1:0", source=FileSource(link))
    try:
        assert running.admin_url is not None
        status, body = await add_example(http, running.admin_url, "vectorise this loop")
        assert status == 200, body
    finally:
        await running.close()
    assert link.is_symlink() and (tmp_path / "..data").is_symlink()
    assert os.readlink(link) == "..data/quickstart.yaml"
    assert "vectorise this loop" in code_examples(target)
    assert sorted(p.name for p in version.iterdir()) == ["quickstart.yaml"]


async def test_an_example_with_a_line_separator_is_added_in_place(
    quickstart: RunningGateway, http: aiohttp.ClientSession, tmp_path: Path,
) -> None:
    path = tmp_path / "quickstart.yaml"
    before = path.read_text()
    assert quickstart.admin_url is not None
    for text in ("nel\u0085x", "line\u2028separator", "c1\u009fcontrol"):
        status, body = await add_example(http, quickstart.admin_url, text)
        assert status == 200, body
    after = path.read_text()
    assert comments(after) == comments(before)
    assert code_examples(path)[-3:] == ["nel\u0085x", "line\u2028separator", "c1\u009fcontrol"]
    assert after.startswith(before.split("            examples:")[0])


async def test_put_and_delete_keep_every_comment_of_the_file(
    tmp_path: Path, http: aiohttp.ClientSession,
) -> None:
    path = quickstart_file(tmp_path)
    before = path.read_text()
    running = await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
    try:
        admin = running.admin_url
        assert admin is not None
        status, body = await put_route(http, admin, "batch", "/batch/*", PLAYGROUND_KEY)
        assert status == 200 and body["applied"] is True, body
        assert comments(path.read_text()) == comments(before)
        key = {"X-API-KEY": PLAYGROUND_KEY}
        async with http.get(f"{admin}/admin/routes/auto", headers=key) as resp:
            route = (await resp.json())["config"]
        route["plugins"]["ai-proxy-multi"]["timeout"] = 30000
        async with http.put(f"{admin}/admin/routes/auto", json=route, headers=key) as resp:
            assert resp.status == 200, await resp.text()
        edited = path.read_text()
        assert comments(edited) == comments(before)
        assert yaml.safe_load(edited)["routes"][0]["plugins"]["ai-proxy-multi"][
            "timeout"] == 30000
        async with http.delete(f"{admin}/admin/routes/batch", headers=key) as resp:
            assert resp.status == 200
        assert [r["id"] for r in yaml.safe_load(path.read_text())["routes"]] == ["auto"]
        assert comments(path.read_text()) == comments(before)
    finally:
        await running.close()


ANCHORED = """\
# Two instances share their options through a YAML anchor.
listen: 127.0.0.1:0
admin: {listen: "127.0.0.1:0", key: admin-test-key-123}
routes:
  - id: r1
    uri: /v1/chat/completions
    plugins:
      ai-proxy-multi:
        instances:
          - {name: a, provider: echo, weight: 1, options: &shared {model: m}}
          - {name: b, provider: echo, weight: 1, options: *shared}
"""


async def test_a_file_the_edit_cannot_keep_is_refused_not_rewritten(
    tmp_path: Path, http: aiohttp.ClientSession,
) -> None:
    path = tmp_path / "anchored.yaml"
    path.write_text(ANCHORED)
    running = await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
    try:
        assert running.admin_url is not None
        status, body = await put_route(http, running.admin_url, "r2", "/v2/x")
    finally:
        await running.close()
    assert status == 409 and body["error"]["code"] == "conflict", body
    assert "edit it by hand" in body["error"]["message"]
    assert path.read_text() == ANCHORED
