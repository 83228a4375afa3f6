"""Where config versions come from: a file on disk or a prefix in etcd.

Both sources go through one interface: `load()` reads and builds a complete
version (or raises ConfigError / SourceError), `changes()` yields whenever a new
version may be available. The watcher in the server does the rest: parse,
validate, build, swap; on any failure the running version keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

import orjson
import yaml

from semproxy.config.etcd import EtcdClient, EtcdCompacted, EtcdError
from semproxy.config.loader import load_data, load_file, parse_document
from semproxy.config.spec import GatewayConfig

log = logging.getLogger("semproxy.config")


class SourceError(Exception):
    """The source itself is unavailable (as opposed to holding an invalid config)."""


class ConfigSource(Protocol):
    description: str

    async def load(self) -> GatewayConfig: ...

    def changes(self) -> AsyncIterator[None]: ...

    async def save(self, document: dict[str, Any]) -> None: ...

    async def aclose(self) -> None: ...


def logged(config: GatewayConfig) -> GatewayConfig:
    """`config`, its warnings written to the log (once per version loaded)."""
    for warning in config.warnings:
        log.warning("config: %s", warning)
    return config


class FileSource:
    """A config file, polled for changes (mtime, size and content) every `interval_s`.

    Polling keeps the dependency list short and works on every filesystem,
    including bind mounts and ConfigMaps where inotify events are unreliable.
    """

    def __init__(self, path: str | Path, interval_s: float = 0.5) -> None:
        self.path = Path(path)
        self.description = f"file {self.path}"
        self._interval = interval_s
        self._seen = self._stamp()

    def _stamp(self) -> tuple[int, int, bytes] | None:
        try:
            stat = self.path.stat()
            return stat.st_mtime_ns, stat.st_size, self.path.read_bytes()
        except OSError:
            return None

    async def load(self) -> GatewayConfig:
        self._seen = self._stamp()
        return logged(await asyncio.to_thread(load_file, self.path))

    async def save(self, document: dict[str, Any]) -> None:
        """Write atomically (temp file + rename) so a watcher never reads half a file."""
        if self.path.suffix == ".json":
            text = orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()
        else:
            text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        await asyncio.to_thread(tmp.write_text, text, "utf-8")
        await asyncio.to_thread(os.replace, tmp, self.path)

    async def changes(self) -> AsyncIterator[None]:
        while True:
            await asyncio.sleep(self._interval)
            stamp = self._stamp()
            if stamp is not None and stamp != self._seen:
                self._seen = stamp
                yield None

    async def aclose(self) -> None:
        return None


def document_from_etcd(items: list[tuple[str, str]], prefix: str) -> dict[str, Any]:
    """Assemble one config document from `{prefix}/global` and `{prefix}/routes/<id>` keys."""
    doc: dict[str, Any] = {}
    routes = []
    for key, value in sorted(items):
        rel = key[len(prefix):].lstrip("/")
        if rel == "global":
            doc.update(parse_document(value, key))
        elif rel.startswith("routes/"):
            routes.append(parse_document(value, key))
    doc["routes"] = routes
    return doc


class EtcdSource:
    """Routes stored one key each under a prefix (as APISIX stores its routes)."""

    def __init__(self, endpoint: str, prefix: str,
                 backoff_max_s: float = 2.0) -> None:
        self.client = EtcdClient(endpoint)
        self.prefix = prefix.rstrip("/")
        self.description = f"etcd {endpoint} {self.prefix}"
        self._revision = 0
        self._backoff_max = backoff_max_s
        self.connected = False

    async def load(self) -> GatewayConfig:
        # The replica's own --listen is applied by the runner, never written into the
        # document: admin writes save this document back to etcd for every replica.
        doc = await self.document()
        return logged(await asyncio.to_thread(load_data, doc))

    async def document(self) -> dict[str, Any]:
        """The config document as stored (before `${VAR}` is filled in)."""
        try:
            kvs, revision = await self.client.range_prefix(self.prefix + "/")
        except EtcdError as exc:
            self.connected = False
            raise SourceError(str(exc)) from exc
        self.connected = True
        self._revision = revision
        return document_from_etcd([(kv.key, kv.value) for kv in kvs], self.prefix)

    async def changes(self) -> AsyncIterator[None]:
        """Yield on every change; reconnect with backoff, resume after the last revision.

        It also yields when the watch breaks (so the outage is reported) and when
        it is back (so the source is reported up and anything missed is read).
        """
        delay = 0.2
        while True:
            try:
                async for events in self.client.watch(self.prefix + "/", self._revision + 1):
                    delay = 0.2
                    if events:
                        self._revision = max(self._revision, *(e.revision for e in events))
                    if events or not self.connected:
                        self.connected = True
                        yield None
            except EtcdCompacted:
                log.warning("etcd history compacted; reloading everything")
                yield None  # load() re-reads everything and resets the revision
                continue
            except EtcdError as exc:
                if self.connected:
                    log.warning("etcd watch lost (%s); retrying", exc)
                self.connected = False
                yield None
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._backoff_max)

    async def save(self, document: dict[str, Any]) -> None:
        await self.push(document)

    async def push(self, document: dict[str, Any]) -> int:
        """Write a whole config document: one key per route, stale routes removed.

        Everything goes in one transaction, so watchers never see half a version.
        """
        routes = document.get("routes") or []
        global_doc = {k: v for k, v in document.items() if k != "routes"}
        try:
            existing, _ = await self.client.range_prefix(self.prefix + "/routes/")
            puts = {f"{self.prefix}/global": orjson.dumps(global_doc).decode()}
            puts.update({f"{self.prefix}/routes/{r['id']}": orjson.dumps(r).decode()
                         for r in routes})
            return await self.client.replace(
                puts, [kv.key for kv in existing if kv.key not in puts])
        except EtcdError as exc:
            raise SourceError(str(exc)) from exc

    async def aclose(self) -> None:
        await self.client.aclose()
