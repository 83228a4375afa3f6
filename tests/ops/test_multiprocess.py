"""`semproxy serve --workers 2`: a scrape on the shared admin port counts both workers."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from prometheus_client.mmap_dict import MmapedDict
from tests.conftest import chat, instance, route_config

from semproxy.observability.metrics import FOLD_INTERVAL_S

from .conftest import ADMIN_KEY, cli_env, free_port, sample, scrape

REQUESTS = 40


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    port, admin_port = free_port(), free_port()
    config = {**route_config([instance("echo")]),
              "admin": {"listen": f"127.0.0.1:{admin_port}", "key": ADMIN_KEY}}
    path = tmp_path / "semproxy.yaml"
    path.write_text(yaml.safe_dump(config))
    # PROMETHEUS_MULTIPROC_DIR is left unset: serve makes its own directory (in
    # TMPDIR, so the test can look inside) after prometheus_client was imported.
    env = {**cli_env(), "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "semproxy", "--log-level", "WARNING", "serve", "--config",
         str(path), "--workers", "2", "--listen", f"127.0.0.1:{port}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        ready = [proc.stdout.readline() for _ in range(4)]  # listening + admin, per worker
        assert sum("semproxy listening on" in line for line in ready) == 2, ready
        (metrics_dir,) = tmp_path.glob("semproxy-metrics-*")
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{admin_port}", metrics_dir
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        if proc.stdout is not None:
            proc.stdout.close()
    assert not list(tmp_path.glob("semproxy-metrics-*"))  # removed on exit


def requests_per_worker(metrics_dir: Path) -> dict[str, float]:
    """What each worker's own metrics file holds for semproxy_requests_total."""
    counts: dict[str, float] = {}
    for path in metrics_dir.glob("counter_*.db"):
        pid = path.stem.split("_")[1]
        for key, value, *_ in MmapedDict.read_all_values_from_file(str(path)):
            if json.loads(key)[0] == "semproxy_requests":
                counts[pid] = counts.get(pid, 0) + value
    return counts


async def folded_per_worker(metrics_dir: Path, within_s: float = 10.0) -> dict[str, float]:
    """`requests_per_worker` once every worker has folded what it served: a worker writes
    its counts to its file every FOLD_INTERVAL_S, later when the machine is busy."""
    deadline = time.monotonic() + within_s
    counts = requests_per_worker(metrics_dir)
    while time.monotonic() < deadline and not (
            len(counts) == 2 and all(n > 0 for n in counts.values())):
        await asyncio.sleep(FOLD_INTERVAL_S)
        counts = requests_per_worker(metrics_dir)
    return counts


async def test_a_scrape_counts_requests_served_by_both_workers(
    two_workers: tuple[str, str, Path],
) -> None:
    url, admin, metrics_dir = two_workers
    # A new connection per request, so the kernel spreads them over both workers.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        for _ in range(REQUESTS):
            async with http.post(url + "/v1/chat/completions", json=chat("hi")) as resp:
                assert resp.status == 200
        per_worker = await folded_per_worker(metrics_dir)
        assert len(per_worker) == 2 and all(n > 0 for n in per_worker.values()), per_worker
        for _ in range(4):  # whichever worker answers the scrape sees all of them
            m = await scrape(http, admin)
            assert sample(m, "semproxy_requests_total", route="r1", instance="echo",
                          status="200") == REQUESTS
            assert sample(m, "semproxy_request_duration_seconds_count", route="r1") == REQUESTS
        assert sample(m, "semproxy_config_source_up") == 1


def test_workers_bind_the_configs_listen_when_no_listen_flag_is_given(tmp_path: Path) -> None:
    port = free_port()
    config = {**route_config([instance("echo")]), "listen": f"127.0.0.1:{port}"}
    path = tmp_path / "semproxy.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.Popen(
        [sys.executable, "-m", "semproxy", "--log-level", "WARNING", "serve", "--config",
         str(path), "--workers", "2"],
        env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        ready = [proc.stdout.readline() for _ in range(2)]
        assert all(f"listening on http://127.0.0.1:{port} " in line for line in ready), ready
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read()
        assert json.loads(body)["status"] == "ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_taken_port_is_one_clear_line_with_two_workers(tmp_path: Path) -> None:
    path = tmp_path / "semproxy.yaml"
    path.write_text(yaml.safe_dump(route_config([instance("echo")])))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "semproxy", "serve", "--config", str(path), "--workers", "2",
             "--listen", f"127.0.0.1:{port}"],
            env=cli_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert done.stderr.splitlines() == [
        f"semproxy serve: cannot listen on 127.0.0.1:{port}: Address already in use"]
