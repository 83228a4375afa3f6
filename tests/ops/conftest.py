"""Fixtures for operations tests: a real etcd, and gateway processes run by the CLI."""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from semproxy.admin.run import RunningGateway, start
from semproxy.config.source import FileSource

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class EtcdServer:
    """One etcd member on loopback ports; `stop` and `start` keep its data and ports."""

    data_dir: Path
    client_port: int = field(default_factory=free_port)
    peer_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    def start(self, timeout: float = 10.0) -> None:
        client, peer = self.url, f"http://127.0.0.1:{self.peer_port}"
        self.proc = subprocess.Popen(
            ["etcd", "--name", "ops-test", "--data-dir", str(self.data_dir),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"ops-test={peer}", "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_answering():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.proc.returncode}")
            time.sleep(0.05)
        raise RuntimeError("etcd did not answer /v3/kv/range in time")

    def is_answering(self) -> bool:
        req = urllib.request.Request(f"{self.url}/v3/kv/range", data=b'{"key":"AA=="}',
                                     method="POST")
        try:
            with urllib.request.urlopen(req, timeout=0.5) as resp:
                return resp.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    if shutil.which("etcd") is None:
        pytest.skip("the etcd binary is not installed (apt-get install etcd-server)")
    server = EtcdServer(tmp_path_factory.mktemp("etcd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def etcd(etcd_server: EtcdServer) -> Iterator[EtcdServer]:
    """The session etcd, running again if a test stopped it."""
    if not etcd_server.is_answering():
        etcd_server.start()
    yield etcd_server
    if not etcd_server.is_answering():
        etcd_server.start()


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


def run_cli(*args: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "semproxy", *args], env=cli_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)


ADMIN_KEY = "admin-test-key-123"
UPSTREAM_SECRET = "Bearer sk-SECRET-123"


@dataclass
class Served:
    """A gateway serving a config file it watches, with its admin listener."""

    running: RunningGateway
    path: Path

    @property
    def url(self) -> str:
        return self.running.url

    @property
    def admin(self) -> str:
        assert self.running.admin_url is not None
        return self.running.admin_url

    def rewrite(self, config: dict[str, Any]) -> None:
        write_config(self.path, config)


def write_config(path: Path, config: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    os.replace(tmp, path)


def with_admin(config: dict[str, Any], key: str | None = ADMIN_KEY) -> dict[str, Any]:
    admin: dict[str, Any] = {"listen": "127.0.0.1:0"}
    if key is not None:
        admin["key"] = key
    return {**config, "admin": admin}


ServeFactory = Callable[[dict[str, Any]], Awaitable[Served]]


@pytest.fixture
async def serve_file(tmp_path: Path) -> AsyncIterator[ServeFactory]:
    """Start gateways the way `semproxy serve --config FILE` does, in this process."""
    started: list[RunningGateway] = []

    async def factory(config: dict[str, Any]) -> Served:
        path = tmp_path / f"semproxy-{len(started)}.yaml"
        write_config(path, config)
        source = FileSource(path, interval_s=0.05)
        running = await start(await source.load(), "127.0.0.1:0", source=source)
        started.append(running)
        return Served(running, path)

    yield factory
    for running in started:
        await running.close()


async def eventually(check: Callable[[], bool | Awaitable[bool]], within: float,
                     step: float = 0.05) -> float:
    """Wait until `check()` is true; return how long it took, fail after `within` s."""
    started = time.monotonic()
    while True:
        result = check()
        if await result if inspect.isawaitable(result) else result:
            return time.monotonic() - started
        if time.monotonic() - started > within:
            raise AssertionError(f"condition not met within {within}s")
        await asyncio.sleep(step)


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_metrics(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def sample(samples: Samples, name: str, **labels: str) -> float:
    """The one sample of `name` with these labels (others may exist), or fail."""
    matches = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    assert len(matches) == 1, f"{name} {labels}: {len(matches)} samples"
    return matches[0]


async def scrape(http: aiohttp.ClientSession, admin: str) -> Samples:
    async with http.get(f"{admin}/metrics", headers={"X-API-KEY": ADMIN_KEY}) as resp:
        assert resp.status == 200
        assert resp.content_type == "text/plain"
        return parse_metrics(await resp.text())
