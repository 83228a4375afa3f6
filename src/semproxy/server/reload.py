"""Apply new config versions from a source as they appear, keeping the last good one.

A new version is parsed, validated and built (reference embeddings included)
before it is swapped in; any failure is logged and counted and the running
version keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from semproxy.config.source import ConfigSource, SourceError
from semproxy.errors import ConfigError
from semproxy.server.app import Gateway

log = logging.getLogger("semproxy.config")


@dataclass
class ReloadStatus:
    applied: int = 0
    failed: int = 0
    last_error: list[str] = field(default_factory=list)
    source_ok: bool = True


class ConfigWatcher:
    def __init__(self, source: ConfigSource, gateway: Gateway) -> None:
        self.source = source
        self.gateway = gateway
        self.status = ReloadStatus()
        self._task: asyncio.Task[None] | None = None

    async def reload(self) -> ReloadStatus:
        """Load the source once and apply it if it is a new, valid version."""
        try:
            config = await self.source.load()
        except ConfigError as exc:
            self._failed(exc.errors, "rejected invalid config")
            return self.status
        except SourceError as exc:
            self.status.source_ok = False
            self._failed([str(exc)], "config source unavailable")
            return self.status
        self.status.source_ok = True
        if config.version != self.gateway.table.version:
            await self.gateway.apply(config)
            self.status.applied += 1
            self.status.last_error = []
        return self.status

    def _failed(self, errors: list[str], what: str) -> None:
        self.status.failed += 1
        self.status.last_error = errors
        log.error("%s from %s; keeping version %s:\n  %s", what, self.source.description,
                  self.gateway.table.version, "\n  ".join(errors))

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
