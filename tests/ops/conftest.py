"""Fixtures for operations tests: a real etcd, and gateway processes run by the CLI."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

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
