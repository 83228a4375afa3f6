"""A small etcd v3 client over its JSON HTTP gateway, on the shared aiohttp stack.

Only what config storage needs: range over a prefix, put, an atomic
transaction of puts and deletes, and a watch stream that resumes from a
revision. Keys and values travel base64-encoded, as the gateway requires.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson


class EtcdError(Exception):
    pass


class EtcdCompacted(EtcdError):
    """The revision we wanted to resume from is gone: reload everything."""


class EtcdConflict(EtcdError):
    """A conditional write found keys changed since they were read: read again."""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode()


def prefix_end(prefix: str) -> str:
    """The smallest key greater than every key starting with `prefix`."""
    raw = bytearray(prefix.encode())
    while raw and raw[-1] == 0xFF:
        raw.pop()
    raw[-1] += 1
    return bytes(raw).decode("latin-1")


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: str
    mod_revision: int


@dataclass(frozen=True, slots=True)
class WatchEvent:
    kind: str  # "put" or "delete"
    key: str
    value: str
    revision: int


class EtcdClient:
    def __init__(self, endpoint: str, timeout_s: float = 5.0) -> None:
        self.endpoint = endpoint.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with self._http().post(f"{self.endpoint}{path}", data=orjson.dumps(body),
                                         timeout=self._timeout) as resp:
                data = await resp.read()
                if resp.status != 200:
                    raise EtcdError(f"etcd {path} answered {resp.status}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise EtcdError(f"etcd unreachable at {self.endpoint}: {type(exc).__name__}") from exc
        result = orjson.loads(data)
        if not isinstance(result, dict):
            raise EtcdError(f"etcd {path} returned a non-object")
        return result

    async def range_prefix(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every key under `prefix` and the store revision they were read at."""
        data = await self._call("/v3/kv/range", {"key": _b64(prefix),
                                                 "range_end": _b64(prefix_end(prefix))})
        kvs = [KeyValue(_unb64(kv["key"]), _unb64(kv.get("value", "")),
                        int(kv.get("mod_revision", 0))) for kv in data.get("kvs", [])]
        return kvs, int(data["header"]["revision"])

    async def put(self, key: str, value: str) -> int:
        data = await self._call("/v3/kv/put", {"key": _b64(key), "value": _b64(value)})
        return int(data["header"]["revision"])

    async def replace(self, puts: dict[str, str], deletes: list[str],
                      unchanged: tuple[str, int] | None = None) -> int:
        """Write `puts` and remove `deletes` in one transaction: one revision, one watch event.

        With `unchanged` = (prefix, revision), only if no key under the prefix was
        written after that revision (EtcdConflict otherwise): a read-modify-write
        then never overwrites another writer's change.
        """
        ops: list[dict[str, Any]] = [
            {"request_put": {"key": _b64(k), "value": _b64(v)}} for k, v in puts.items()]
        ops += [{"request_delete_range": {"key": _b64(k)}} for k in deletes]
        body: dict[str, Any] = {"success": ops}
        if unchanged is not None:
            prefix, revision = unchanged
            body["compare"] = [{"key": _b64(prefix), "range_end": _b64(prefix_end(prefix)),
                                "target": "MOD", "result": "LESS",
                                "mod_revision": str(revision + 1)}]
        data = await self._call("/v3/kv/txn", body)
        if unchanged is not None and not data.get("succeeded", False):
            raise EtcdConflict("the config in etcd changed during the write")
        return int(data["header"]["revision"])

    async def watch(self, prefix: str, start_revision: int
                    ) -> AsyncIterator[list[WatchEvent]]:
        """Batches of events under `prefix` from `start_revision` on, until the stream ends.

        One batch is one watch response: a transaction's changes arrive together.
        The first batch (the watch is created) and progress notices are empty.
        Raises EtcdCompacted when etcd no longer has that revision.
        """
        body = {"create_request": {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix)),
                                   "start_revision": start_revision}}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout.total)
        try:
            async with self._http().post(f"{self.endpoint}/v3/watch", data=orjson.dumps(body),
                                         timeout=timeout) as resp:
                if resp.status != 200:
                    raise EtcdError(f"etcd watch answered {resp.status}")
                async for line in resp.content:
                    if line.strip():
                        yield _events(line)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise EtcdError(f"etcd watch broke: {type(exc).__name__}") from exc

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _events(line: bytes) -> list[WatchEvent]:
    result = orjson.loads(line).get("result", {})
    if int(result.get("compact_revision", 0) or 0) > 0:
        raise EtcdCompacted(f"revision compacted up to {result['compact_revision']}")
    if result.get("canceled"):
        raise EtcdError(f"etcd cancelled the watch: {result.get('cancel_reason', '')}")
    out = []
    for ev in result.get("events", []) or []:
        kv = ev["kv"]
        out.append(WatchEvent(
            kind="delete" if ev.get("type") == "DELETE" else "put",
            key=_unb64(kv["key"]), value=_unb64(kv.get("value", "")),
            revision=int(kv.get("mod_revision", 0)),
        ))
    return out
