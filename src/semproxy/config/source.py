"""Where config versions come from: a file on disk or a prefix in etcd.

Both sources go through one interface: `load()` reads and builds a complete
version (or raises ConfigError / SourceError), `changes()` yields whenever a new
version may be available. The watcher in the server does the rest: parse,
validate, build, swap; on any failure the running version keeps serving.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

import orjson

from semproxy.config.edit import ConfigEditError
from semproxy.config.etcd import EtcdClient, EtcdCompacted, EtcdConflict, EtcdError, KeyValue
from semproxy.config.loader import is_json, load_data, load_file, parse_document
from semproxy.config.persist import edit_file
from semproxy.config.rewrite import rewrite
from semproxy.config.spec import GatewayConfig
from semproxy.errors import ConfigError

log = logging.getLogger("semproxy.config")
UPDATE_WAIT_S = 10.0  # how long one admin write keeps retrying a lost etcd race


class SourceError(Exception):
    """The source itself is unavailable (as opposed to holding an invalid config)."""


# What a write does to the document as stored (a copy it may change): the new
# document, or None when there is nothing to write. It raises to refuse.
Change = Callable[[dict[str, Any]], dict[str, Any] | None]


class ConfigSource(Protocol):
    description: str

    async def load(self) -> GatewayConfig: ...

    def changes(self) -> AsyncIterator[None]: ...

    async def update(self, change: Change) -> GatewayConfig | None:
        """Apply `change` to the stored document and store the result, with no other
        write in between, once it validates: the new version (not yet applied), or
        None when `change` had nothing to do. ConfigError when it does not validate,
        SourceError when the store cannot be read or written; nothing is stored then."""

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

    async def update(self, change: Change) -> GatewayConfig | None:
        """Read, change and rewrite the file under its lock; the text is edited where the
        document changed, so the operator's comments and layout stay (`rewrite`)."""
        source = str(self.path)

        def edit(text: str) -> str | None:
            document = parse_document(text, source)
            if not isinstance(document, dict):
                raise ConfigError([f"{source}: the config must be a mapping"])
            new = change(document)
            if new is None:
                return None
            try:
                return rewrite(text, new, source)
            except ConfigEditError:
                if not is_json(text, source):
                    raise
                # JSON has no comments to keep: its layout is all an edit could lose.
                return orjson.dumps(new, option=orjson.OPT_INDENT_2).decode() + "\n"
        return await edit_file(self.path, edit)

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
        self._write_lock = asyncio.Lock()

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

    async def update(self, change: Change) -> GatewayConfig | None:
        """Read, change and write back in one conditional transaction, retried when
        another replica wrote in between (etcd keeps no comments to preserve).

        Each lost race means another write went in, so the writes as a whole always
        progress; one write retries, with a growing random pause that breaks
        lockstep, for up to UPDATE_WAIT_S before it gives up.
        """
        deadline = time.monotonic() + UPDATE_WAIT_S
        async with self._write_lock:
            for attempt in itertools.count():
                try:
                    return await self._try_update(change)
                except EtcdConflict:
                    if time.monotonic() > deadline:
                        break
                await asyncio.sleep(random.uniform(0, 0.01 * min(attempt + 1, 20)))
        raise SourceError(f"the config in etcd kept changing during one write for "
                          f"{UPDATE_WAIT_S:.0f}s; try again")

    async def _try_update(self, change: Change) -> GatewayConfig | None:
        """One read-change-write: the new version, or None (nothing to write);
        EtcdConflict when another write went in after the read."""
        try:
            kvs, revision = await self.client.range_prefix(self.prefix + "/")
        except EtcdError as exc:
            raise SourceError(str(exc)) from exc
        new = change(document_from_etcd([(kv.key, kv.value) for kv in kvs], self.prefix))
        if new is None:
            return None
        config = await asyncio.to_thread(load_data, new)
        await self._write(new, kvs, revision)
        return config

    async def push(self, document: dict[str, Any]) -> int:
        """Write a whole config document: one key per route, stale routes removed.

        Everything goes in one transaction, so watchers never see half a version.
        """
        try:
            existing, _ = await self.client.range_prefix(self.prefix + "/routes/")
            return await self._write(document, existing, None)
        except EtcdError as exc:
            raise SourceError(str(exc)) from exc

    async def _write(self, document: dict[str, Any], existing: list[KeyValue],
                     read_at: int | None) -> int:
        routes = document.get("routes") or []
        global_doc = {k: v for k, v in document.items() if k != "routes"}
        puts = {f"{self.prefix}/global": orjson.dumps(global_doc).decode()}
        puts.update({f"{self.prefix}/routes/{r['id']}": orjson.dumps(r).decode()
                     for r in routes})
        stale = [kv.key for kv in existing
                 if kv.key.startswith(f"{self.prefix}/routes/") and kv.key not in puts]
        unchanged = None if read_at is None else (self.prefix + "/", read_at)
        try:
            return await self.client.replace(puts, stale, unchanged)
        except EtcdConflict:
            raise
        except EtcdError as exc:
            raise SourceError(str(exc)) from exc

    async def aclose(self) -> None:
        await self.client.aclose()
