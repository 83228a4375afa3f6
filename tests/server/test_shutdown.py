"""`semproxy serve` as a real process: SIGTERM drains in-flight streams, then exits 0."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeLLM

SRC = Path(__file__).resolve().parents[2] / "src"
LISTENING = re.compile(rb"semproxy listening on http://127\.0\.0\.1:(\d+) \(pid (\d+)\)")


class ServeProcess:
    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc = proc
        self.log = log
        self.port = 0
        self.worker_pids: set[int] = set()

    async def wait_listening(self, workers: int = 1) -> None:
        assert self.proc.stdout is not None
        async with asyncio.timeout(15):
            while len(self.worker_pids) < workers:
                line = await self.proc.stdout.readline()
                assert line, f"serve exited early: {self.log.read_text()}"
                for port, pid in LISTENING.findall(line):
                    self.port = int(port)
                    self.worker_pids.add(int(pid))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[Any]:
    started: list[ServeProcess] = []

    async def launch(config: dict[str, Any], *args: str) -> ServeProcess:
        path = tmp_path / "gateway.yaml"
        path.write_text(yaml.safe_dump(config))
        log = tmp_path / "serve.log"
        with log.open("wb") as stderr:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "semproxy", "serve", "--config", str(path), *args,
                stdout=asyncio.subprocess.PIPE, stderr=stderr,
                env={**os.environ, "PYTHONPATH": str(SRC)})
        running = ServeProcess(proc, log)
        started.append(running)
        return running

    yield launch
    for running in started:
        # Workers first: while any is alive it holds the stdout pipe open and
        # asyncio's wait() for the parent would never return.
        for pid in running.worker_pids | children_of(running.proc.pid):
            if is_alive(pid):
                os.kill(pid, signal.SIGKILL)
        if running.proc.returncode is None:
            running.proc.kill()
        async with asyncio.timeout(5):
            await running.proc.wait()


def is_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has already exited


def children_of(pid: int) -> set[int]:
    kids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid:
            kids.add(int(stat.parent.name))
    return kids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def is_refused(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except ConnectionRefusedError:
        return True
    writer.close()
    await writer.wait_closed()
    return False


async def test_sigterm_lets_a_running_stream_finish_then_refuses_and_exits_0(
    serve: Any, http: aiohttp.ClientSession
) -> None:
    async with FakeLLM("up") as up:
        config = {**route_config([instance("a", up.url)]), "shutdown_grace": 5}
        gw = await serve(config, "--listen", "127.0.0.1:0")
        await gw.wait_listening()
        body = chat("chunks:10 interval:200", stream=True)
        async with http.post(f"{gw.url}/v1/chat/completions", json=body) as resp:
            assert resp.status == 200
            first = await resp.content.readline()
            assert first.startswith(b"data: ")
            gw.proc.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.3)
            assert await is_refused(gw.port)
            rest = (await resp.read()).decode()
        assert rest.rstrip().endswith("data: [DONE]")
        assert up.streams_completed == 1
        # Exits once drained, well before the 5 s grace period runs out.
        async with asyncio.timeout(3):
            assert await gw.proc.wait() == 0, gw.log.read_text()


async def test_two_workers_share_the_port_and_sigterm_stops_them_all(
    serve: Any, http: aiohttp.ClientSession
) -> None:
    port = free_port()
    gw = await serve(route_config([instance("a")]), "--listen", f"127.0.0.1:{port}",
                     "--workers", "2")
    await gw.wait_listening(workers=2)
    assert gw.port == port
    assert gw.worker_pids == children_of(gw.proc.pid)
    for _ in range(20):
        async with http.post(f"{gw.url}/v1/chat/completions", json=chat("hi"),
                             headers={"Connection": "close"}) as resp:
            assert resp.status == 200
    gw.proc.send_signal(signal.SIGTERM)
    async with asyncio.timeout(10):
        assert await gw.proc.wait() == 0, gw.log.read_text()
    assert not any(is_alive(pid) for pid in gw.worker_pids)
