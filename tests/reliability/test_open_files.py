"""Idle clients cannot use up the gateway's file descriptors.

1,100 idle connections under a 1024 open-file limit once left `/healthz` and chat
unanswered until the keep-alive timeout. The gateway raises its soft limit to the
hard limit at start, caps client connections below what the limit allows, and
closes the oldest connections (logging it) when a new client arrives at the cap.
"""

from __future__ import annotations

import http.client
import resource
import socket
from pathlib import Path

import pytest

from .conftest import semantic_route
from .process import GatewayProcess


def open_limit(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no Max open files line")


def healthz(url: str) -> int:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status
    finally:
        conn.close()


def test_the_soft_open_file_limit_is_raised_to_the_hard_limit(tmp_path: Path) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY or hard <= 256:
        pytest.skip(f"needs a finite hard open-file limit above 256 (have {hard})")
    config = {"listen": "127.0.0.1:0", "routes": [semantic_route()]}
    with GatewayProcess(config, tmp_path, open_files=(256, hard)) as gw:
        assert open_limit(gw.pid) == (hard, hard)


def test_more_idle_connections_than_the_limit_allows_leave_healthz_answering(
    tmp_path: Path,
) -> None:
    # Hard limit 256 too, so it cannot be raised: the cap comes from the limit.
    config = {"listen": "127.0.0.1:0", "routes": [semantic_route()]}
    idle: list[socket.socket] = []
    with GatewayProcess(config, tmp_path, open_files=(256, 256)) as gw:
        host, port = gw.url.removeprefix("http://").rsplit(":", 1)
        try:
            for _ in range(300):
                idle.append(socket.create_connection((host, int(port)), timeout=5))
            assert healthz(gw.url) == 200
            assert gw.fd_count() < 256
        finally:
            for sock in idle:
                sock.close()
    logs = gw.logs()  # complete once the gateway has stopped
    assert logs.count("client connection cap reached") == 1  # logged, and rate-limited
