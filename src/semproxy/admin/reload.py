"""Apply new config versions from a source as they appear, keeping the last good one.

A new version is parsed, validated and built (reference embeddings included)
before it is swapped in; any failure is logged and counted and the running
version keeps serving. A source that cannot be read (etcd down) is reported,
not counted as a rejected version: the replica keeps serving what it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Protocol

from semproxy.config.source import ConfigSource, SourceError
from semproxy.errors import ConfigError
from semproxy.server.app import Gateway

log = logging.getLogger("semproxy.config")


class ReloadObserver(Protocol):
    def on_reload_failed(self) -> None:
        """A new version was rejected as invalid."""

    def on_source(self, is_up: bool) -> None:
        """The source answered (True) or could not be read (False)."""


@dataclass
class ReloadStatus:
    """Totals since the watcher started, and the state after the last read."""

    applied: int = 0
    failed: int = 0
    last_error: list[str] = field(default_factory=list)
    source_ok: bool = True


@dataclass(frozen=True)
class ReloadResult:
    """What one read of the source did: a version applied (1) or rejected (1), or neither."""

    applied: int
    failed: int
    errors: list[str]
    source_ok: bool


class ConfigWatcher:
    def __init__(self, source: ConfigSource, gateway: Gateway,
                 observer: ReloadObserver | None = None) -> None:
        self.source = source
        self.gateway = gateway
        self.observer = observer
        self.status = ReloadStatus()
        self._task: asyncio.Task[None] | None = None
        # The poller and admin writes may reload at once; one at a time keeps the
        # newest read the one that ends up active.
        self._lock = asyncio.Lock()

    async def reload(self) -> ReloadResult:
        """Load the source once and apply it if it is a new, valid version."""
        async with self._lock:
            before = (self.status.applied, self.status.failed)
            try:
                await self._reload_once()
            except SourceError as exc:
                self._source_down(exc)
            except ConfigError as exc:
                self._source_up()
                self._rejected(exc.errors)
            except Exception as exc:
                # Whatever a new version does (a bug in a check, a builder that
                # raises), the watcher must outlive it and keep the last good
                # version serving: reject, log, count, like an invalid config.
                log.exception("config version from %s could not be built",
                              self.source.description)
                self._rejected([f"<root>: the config could not be built "
                                f"({type(exc).__name__})"])
            status = self.status
            return ReloadResult(status.applied - before[0], status.failed - before[1],
                                list(status.last_error), status.source_ok)

    async def _reload_once(self) -> None:
        config = await self.source.load()
        self._source_up()
        self.status.last_error = []
        if config.fingerprint != self.gateway.config.fingerprint:
            await self.gateway.apply(config)
            self.status.applied += 1

    def _rejected(self, errors: list[str]) -> None:
        self.status.failed += 1
        self.status.last_error = errors
        if self.observer is not None:
            self.observer.on_reload_failed()
        log.error("rejected invalid config from %s; keeping version %s:\n  %s",
                  self.source.description, self.gateway.table.version, "\n  ".join(errors))

    def _source_down(self, exc: SourceError) -> None:
        if self.status.source_ok:
            log.warning("config source %s unavailable (%s); serving version %s until it "
                        "returns", self.source.description, exc, self.gateway.table.version)
        self.status.source_ok = False
        self.status.last_error = [str(exc)]
        if self.observer is not None:
            self.observer.on_source(False)

    def _source_up(self) -> None:
        if not self.status.source_ok:
            log.info("config source %s is back", self.source.description)
        self.status.source_ok = True
        if self.observer is not None:
            self.observer.on_source(True)

    async def _run(self) -> None:
        async for _ in self.source.changes():
            await self.reload()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.source.aclose()
