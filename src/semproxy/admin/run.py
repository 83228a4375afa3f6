"""Running the gateway: one worker in-process, or N processes sharing the port.

Each worker loads its config from the source (file or etcd), watches it for new
versions, serves the public listener and, when configured, the admin listener
(admin API and /metrics). SIGTERM/SIGINT stop accepting new connections at once,
let in-flight requests (streams included) finish for the grace period, then exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from semproxy.admin.api import AdminAPI, check_admin_settings
from semproxy.admin.playground import Playground
from semproxy.admin.reload import ConfigWatcher
from semproxy.config.source import ConfigSource, FileSource, SourceError
from semproxy.config.spec import GatewayConfig
from semproxy.observability.decisions import DecisionLog
from semproxy.observability.fanout import FanoutObserver
from semproxy.observability.metrics import Metrics, multiprocess_enabled, use_multiprocess_dir
from semproxy.server.app import Gateway, build_app, stamp_headers
from semproxy.server.listener import CappedTCPSite, default_max_connections, raise_open_file_limit

log = logging.getLogger("semproxy.server")

SourceFactory = Callable[[], ConfigSource]
FOLD_S = 1.0  # seconds between a worker's folds of its plain counters (--workers N)


@dataclass
class RunningGateway:
    gateway: Gateway
    runner: web.AppRunner
    host: str
    port: int
    watcher: ConfigWatcher | None = None
    admin_runner: web.AppRunner | None = None
    admin_host: str = "127.0.0.1"
    admin_port: int | None = None
    folder: asyncio.Task[None] | None = None  # --workers: folds the metrics into their files
    folding: asyncio.Task[None] | None = None  # --workers: folds the governance counts

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def admin_url(self) -> str | None:
        if self.admin_port is None:
            return None
        return f"http://{self.admin_host}:{self.admin_port}"

    async def close(self) -> None:
        if self.folding is not None:
            self.folding.cancel()
        if self.folder is not None:
            self.folder.cancel()  # its last fold writes out what is still counted
            with contextlib.suppress(asyncio.CancelledError):
                await self.folder
        if self.watcher is not None:
            await self.watcher.stop()
        if self.admin_runner is not None:
            await self.admin_runner.cleanup()
        await self.runner.cleanup()


def split_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


async def _listen(app: web.Application, listen: str, reuse_port: bool, grace: float,
                  max_connections: int) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=grace)
    await runner.setup()
    host, port = split_listen(listen)
    site = CappedTCPSite(runner, host, port, max_connections=max_connections,
                         reuse_port=reuse_port, backlog=1024)
    await site.start()
    return runner, int(runner.addresses[0][1])


async def start(config: GatewayConfig, listen: str | None = None, reuse_port: bool = False,
                source: ConfigSource | None = None, max_connections: int | None = None
                ) -> RunningGateway:
    """Start one worker on a real socket (port 0 picks a free one) and return it.

    With a `source`, the worker watches it for new versions and serves the admin
    API when the config has an `admin` section. `max_connections` caps client
    connections per listener (default: from the open-file limit).
    """
    if max_connections is None:
        max_connections = default_max_connections(raise_open_file_limit())
    metrics = Metrics()
    decisions = DecisionLog()
    gateway = Gateway(config, FanoutObserver(metrics, decisions))
    await gateway.start()
    watcher = None if source is None else ConfigWatcher(source, gateway, metrics)
    app = build_app(gateway, None if watcher is None else lambda: watcher.status.source_ok)
    runner, port = await _listen(app, listen or config.listen, reuse_port,
                                 config.shutdown_grace_s, max_connections)
    running = RunningGateway(gateway, runner, split_listen(listen or config.listen)[0], port,
                             watcher)
    if multiprocess_enabled():
        running.folder = asyncio.create_task(metrics.fold_every())
    if watcher is not None and source is not None:
        watcher.start()
        await _start_admin(running, metrics, decisions, source, reuse_port, max_connections)
    return running


async def _start_admin(running: RunningGateway, metrics: Metrics, decisions: DecisionLog,
                       source: ConfigSource, reuse_port: bool, max_connections: int) -> None:
    config = running.gateway.config
    if config.admin is None:
        return
    refusal = check_admin_settings(config)
    if refusal is not None:
        log.error("admin listener not started: %s", refusal)
        return
    assert running.watcher is not None

    async def render() -> tuple[bytes, str]:
        running.gateway.report(metrics)
        return await metrics.render()

    api = AdminAPI(running.gateway, running.watcher, source, render)
    app = api.app()
    app.on_response_prepare.append(stamp_headers)
    config_path = source.path if isinstance(source, FileSource) else None
    Playground(running.gateway, decisions, config_path, running.watcher).mount(app)
    if multiprocess_enabled():
        running.folding = asyncio.get_running_loop().create_task(
            fold_counts(running.gateway, metrics))
    running.admin_host = split_listen(config.admin.listen)[0]
    running.admin_runner, running.admin_port = await _listen(
        app, config.admin.listen, reuse_port, 1.0, max_connections)


async def fold_counts(gateway: Gateway, metrics: Metrics, every_s: float = FOLD_S) -> None:
    """With `--workers N` a scrape is answered by one worker, which folds only its own
    plain counters (spend, governance) into the shared metric files: every worker folds
    its own on a timer too, so a scrape sees every worker's counts at most this late."""
    while True:
        await asyncio.sleep(every_s)
        metrics.on_counts(gateway.governance.counts())


async def load_initial(source: ConfigSource, retry_s: float = 1.0) -> GatewayConfig:
    """The first version; an unreachable source (etcd down) is retried, never fatal."""
    while True:
        try:
            return await source.load()
        except SourceError as exc:
            log.warning("config source unavailable (%s); retrying in %.0fs", exc, retry_s)
            await asyncio.sleep(retry_s)


async def serve_forever(make_source: SourceFactory, listen: str | None,
                        reuse_port: bool, max_connections: int | None = None) -> None:
    source = make_source()
    config = await load_initial(source)
    open_files = raise_open_file_limit()
    if max_connections is None:
        max_connections = default_max_connections(open_files)
    log.info("open-file limit %d; at most %d client connections per listener",
             open_files, max_connections)
    running = await start(config, listen, reuse_port, source, max_connections)
    # Everything built so far (config, model, route tables) lives for the whole
    # process: moving it out of the collector's reach keeps each young-generation
    # collection on the request path from rescanning it.
    gc.collect()
    gc.freeze()
    # A request allocates a few dozen containers (futures, dicts, decisions), so
    # the default young-generation threshold of 700 ran a collection every few dozen
    # requests; 10,000 keeps cyclic garbage bounded and took about 3 us of CPU off
    # each request (A/B in alternating benchmark runs).
    gc.set_threshold(10_000, 10, 10)
    # One write per line: with several workers on one stdout (and PYTHONUNBUFFERED),
    # print() would write text and newline separately and workers' lines interleave.
    announce = f"semproxy listening on {running.url} (pid {os.getpid()})\n"
    if running.admin_url:
        announce += f"semproxy admin on {running.admin_url}\n"
    sys.stdout.write(announce)
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down: draining in-flight requests for up to %.0fs",
             running.gateway.config.shutdown_grace_s)
    await running.close()


def run_worker(make_source: SourceFactory, listen: str | None, reuse_port: bool,
               max_connections: int | None = None) -> None:
    try:
        import uvloop
        uvloop.install()
    except ImportError:  # uvloop is optional on platforms without it
        pass
    try:
        asyncio.run(serve_forever(make_source, listen, reuse_port, max_connections))
    except OSError as exc:  # a forked worker: one line, as the CLI says it for one worker
        if not reuse_port:
            raise
        sys.stderr.write(f"semproxy serve: {exc.strerror or exc}\n")
        raise SystemExit(1) from None
    finally:
        # Forked workers leave through os._exit, which skips logging's atexit
        # flush: write out what is still buffered.
        logging.shutdown()


def run(make_source: SourceFactory, listen: str | None = None, workers: int = 1,
        max_connections: int | None = None) -> int:
    if workers <= 1:
        run_worker(make_source, listen, False, max_connections)
        return 0
    host, port = split_listen(listen or _configured_listen(make_source))
    if port == 0:
        port = _free_port(host)
    _check_free(host, port)  # one clear line here, not a traceback from every worker
    # Workers write their metrics to a shared directory so any one can answer a scrape.
    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    own_dir = metrics_dir is None
    if own_dir:
        metrics_dir = tempfile.mkdtemp(prefix="semproxy-metrics-")
    assert metrics_dir is not None
    use_multiprocess_dir(metrics_dir)
    try:
        return _run_workers(make_source, f"{host}:{port}", workers, max_connections)
    finally:
        if own_dir and metrics_dir:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _configured_listen(make_source: SourceFactory) -> str:
    """The config's `listen`, read once in the parent: every worker binds the same port."""
    async def first() -> str:
        source = make_source()
        try:
            return (await load_initial(source)).listen
        finally:
            await source.aclose()
    return asyncio.run(first())


def _run_workers(make_source: SourceFactory, address: str, workers: int,
                 max_connections: int | None) -> int:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=run_worker, args=(make_source, address, True, max_connections))
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


def _check_free(host: str, port: int) -> None:
    """Raise OSError (the CLI prints it on one line) when the workers could not bind."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            raise OSError(exc.errno, f"cannot listen on {host}:{port}: "
                                     f"{exc.strerror or exc}") from None


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
