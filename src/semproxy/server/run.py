"""Running the gateway: one worker in-process, or N processes sharing the port.

SIGTERM/SIGINT stop accepting new connections at once, let in-flight requests
(streams included) finish for the grace period, then exit 0.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import socket
import sys
from dataclasses import dataclass

from aiohttp import web

from semproxy.config.runtime import GatewayConfig
from semproxy.server.app import Gateway, build_app

log = logging.getLogger("semproxy.server")


@dataclass
class RunningGateway:
    gateway: Gateway
    runner: web.AppRunner
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def close(self) -> None:
        await self.runner.cleanup()


def split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


async def start(config: GatewayConfig, listen: str | None = None,
                reuse_port: bool = False) -> RunningGateway:
    """Start one worker on a real socket (port 0 picks a free one) and return it."""
    gateway = Gateway(config)
    await gateway.table.warm()
    runner = web.AppRunner(build_app(gateway), access_log=None,
                           shutdown_timeout=config.shutdown_grace_s)
    await runner.setup()
    host, port = split_listen(listen or config.listen)
    site = web.TCPSite(runner, host, port, reuse_port=reuse_port, backlog=1024)
    await site.start()
    bound = int(runner.addresses[0][1])
    return RunningGateway(gateway, runner, host, bound)


async def serve_forever(config: GatewayConfig, listen: str | None, reuse_port: bool) -> None:
    running = await start(config, listen, reuse_port)
    # One write per line: with several workers on one stdout (and PYTHONUNBUFFERED),
    # print() would write text and newline separately and workers' lines interleave.
    sys.stdout.write(f"semproxy listening on {running.url} (pid {os.getpid()})\n")
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down: draining in-flight requests for up to %.0fs",
             config.shutdown_grace_s)
    await running.close()


def run_worker(config: GatewayConfig, listen: str | None, reuse_port: bool) -> None:
    try:
        import uvloop
        uvloop.install()
    except ImportError:  # uvloop is optional on platforms without it
        pass
    asyncio.run(serve_forever(config, listen, reuse_port))


def run(config: GatewayConfig, listen: str | None = None, workers: int = 1) -> int:
    if workers <= 1:
        run_worker(config, listen, reuse_port=False)
        return 0
    host, port = split_listen(listen or config.listen)
    if port == 0:
        port = _free_port(host)
    address = f"{host}:{port}"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=run_worker, args=(config, address, True), daemon=False)
             for _ in range(workers)]
    for proc in procs:
        proc.start()

    def forward(signum: int, _frame: object) -> None:
        for proc in procs:
            if proc.pid is not None:
                os.kill(proc.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for proc in procs:
        proc.join()
    return max((p.exitcode or 0) for p in procs)


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
