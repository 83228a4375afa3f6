"""A real Redis master, a replica and one sentinel (`redis-server --sentinel`) on loopback.

Debian's redis-server package runs a sentinel from the same binary, so nothing
else is installed. `fail_master` stops the master; the sentinel then promotes
the replica (quorum 1, master seen down after 500 ms).
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.exceptions import RedisError
from redis.sentinel import Sentinel
from tests.fakes.redis_server import free_port

NAME = "semproxy-master"


def _answers(port: int, command: bytes, expect: bytes) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(command)
            return expect in sock.recv(4096)
    except OSError:
        return False


@dataclass
class SentinelSet:
    data_dir: Path
    master: int = field(default_factory=free_port)
    replica: int = field(default_factory=free_port)
    sentinel: int = field(default_factory=free_port)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self) -> None:
        common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                  "--loglevel", "warning"]
        self._run("master", ["redis-server", "--port", str(self.master), *common])
        self._run("replica", ["redis-server", "--port", str(self.replica), *common,
                              "--replicaof", "127.0.0.1", str(self.master)])
        self._wait(self.replica, b"INFO replication\r\n", b"master_link_status:up")
        conf = self.data_dir / "sentinel.conf"
        conf.write_text(f"port {self.sentinel}\nbind 127.0.0.1\ndir {self.data_dir}\n"
                        f"sentinel monitor {NAME} 127.0.0.1 {self.master} 1\n"
                        f"sentinel down-after-milliseconds {NAME} 500\n"
                        f"sentinel failover-timeout {NAME} 3000\n")
        self._run("sentinel", ["redis-server", str(conf), "--sentinel", "--loglevel", "warning"])
        self._wait(self.sentinel, f"SENTINEL get-master-addr-by-name {NAME}\r\n".encode(),
                   str(self.master).encode())

    def fail_master(self, timeout: float = 20.0) -> None:
        """Stop the master and wait until the sentinel names the replica instead."""
        self._stop("master")
        deadline = time.monotonic() + timeout
        sentinel = Sentinel([("127.0.0.1", self.sentinel)], socket_timeout=0.5)
        while time.monotonic() < deadline:  # as a client finds it: promoted and healthy
            try:
                if sentinel.discover_master(NAME)[1] == self.replica and \
                        redis.Redis(port=self.replica).role()[0] == b"master":
                    return
            except RedisError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the sentinel did not promote the replica in time")

    def stop(self) -> None:
        for name in list(self.procs):
            self._stop(name)

    def _run(self, name: str, argv: list[str]) -> None:
        self.procs[name] = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, cwd=self.data_dir)

    def _stop(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @staticmethod
    def _wait(port: int, command: bytes, expect: bytes, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _answers(port, command, expect):
                return
            time.sleep(0.05)
        raise RuntimeError(f"127.0.0.1:{port} did not answer {expect!r} in time")
