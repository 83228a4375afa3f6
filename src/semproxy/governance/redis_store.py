"""The Redis store: counters, budgets and the spend ledger shared by every replica.

Sync, reserve and settle are Lua scripts (sync.lua, reserve.lua, settle.lua,
each with common.lua in front) run by Redis in one step, so a check and its
increment can never interleave with another replica's; redis-py sends them by
SHA and loads them again after a restart (NOSCRIPT). Requests reach Redis through
leases (governance/lease.py): one sync script per worker every few hundred
milliseconds carries every counter's report and the ledger, instead of two
scripts per request. The spend ledger is kept as hashes of sums per consumer,
group, route, instance and end user (field "dimension|value|what"), one per UTC
day, hour and minute (periods.py: how long each is kept), so reading a month's
spend is about 31 HGETALLs and an hour's one, whatever the traffic.

`policy: redis-cluster` is refused: a script may only touch keys of one hash
slot, and a request's counters (a consumer's, its group's, the route's) and the
ledger's day hashes fall in different slots. Grouping them under one hash tag
would put every counter of a deployment on one node, which is a single Redis
with extra steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from semproxy.governance.lease import LeaseAsk, LeaseGrant
from semproxy.governance.model import Hold, Outcome, Settle
from semproxy.governance.periods import covering, hashes_of, spend_key
from semproxy.governance.store import DIMENSIONS, SpendEntry, SpendRow, StoreError

_WHAT = ("requests", "input", "output", "cached_input", "cost")


@dataclass(frozen=True, slots=True)
class RedisTarget:
    """How to reach Redis: one server, or the master a set of sentinels names."""

    host: str = "127.0.0.1"
    port: int = 6379
    username: str | None = None
    password: str | None = None
    database: int = 0
    timeout_s: float = 1.0
    ssl: bool = False
    ssl_verify: bool = False
    pool: int = 100
    sentinels: tuple[tuple[str, int], ...] = ()
    master_name: str | None = None
    sentinel_username: str | None = None
    sentinel_password: str | None = None
    prefix: str = "semproxy:"


def connect(target: RedisTarget) -> tuple[Any, list[Any]]:
    """A redis.asyncio client that fails fast (no retry loop: the caller's policy decides),
    and the sentinel clients it finds its master through (to close with it)."""
    common: dict[str, Any] = dict(
        username=target.username, password=target.password, db=target.database,
        socket_timeout=target.timeout_s, socket_connect_timeout=target.timeout_s,
        retry=Retry(NoBackoff(), 0), max_connections=target.pool)
    if target.sentinels:
        from redis.asyncio.sentinel import Sentinel  # only for the sentinel policy

        sentinel = Sentinel(list(target.sentinels), sentinel_kwargs=dict(  # type: ignore[no-untyped-call]
            username=target.sentinel_username, password=target.sentinel_password,
            socket_timeout=target.timeout_s), **common)
        return sentinel.master_for(target.master_name or "mymaster"), list(sentinel.sentinels)
    # Blocking: a burst of requests waits (up to the timeout) for one of `pool`
    # connections instead of failing when all are busy.
    kind = aioredis.SSLConnection if target.ssl else aioredis.Connection
    extra: dict[str, Any] = dict(ssl_cert_reqs="required" if target.ssl_verify else "none") \
        if target.ssl else {}
    pool = aioredis.BlockingConnectionPool(
        connection_class=kind, host=target.host, port=target.port,
        username=target.username, password=target.password, db=target.database,
        socket_timeout=target.timeout_s, socket_connect_timeout=target.timeout_s,
        max_connections=target.pool, timeout=target.timeout_s, **extra)
    return aioredis.Redis(connection_pool=pool, retry=Retry(NoBackoff(), 0)), []


def _script(name: str) -> str:
    files = resources.files("semproxy.governance")
    return (files.joinpath("common.lua").read_text(encoding="utf-8") + "\n"
            + files.joinpath(name).read_text(encoding="utf-8"))


class RedisStore:
    def __init__(self, target: RedisTarget, name: str = "redis") -> None:
        self.name = name
        self.target = target
        self._client, self._sentinels = connect(target)
        self._reserve = self._client.register_script(_script("reserve.lua"))
        self._settle = self._client.register_script(_script("settle.lua"))
        self._sync = self._client.register_script(_script("sync.lua"))
        self._used = self._client.register_script(_script("used.lua"))
        self._p = target.prefix

    async def reserve(self, res_id: str, holds: Sequence[Hold], low: int, high: int,
                      lease_s: float, now: float) -> Outcome:
        keys: list[str] = []
        markers: list[str] = []
        args: list[Any] = [res_id, int(now * 1000), int(lease_s * 1000), low, high, len(holds)]
        for hold in holds:
            for bucket in hold.reads:
                keys += (f"{self._p}c:{bucket}", f"{self._p}z:{bucket}")
            marker = 0
            if hold.exclusive:
                markers.append(f"{self._p}x:{hold.exclusive}")
                marker = -len(markers)  # resolved below, once the counter keys are all in
            args += (len(hold.reads), hold.limit, hold.fixed, hold.per_output, hold.ttl_s,
                     marker)
        for i in range(6, len(args), 6):
            if args[i + 5] < 0:
                args[i + 5] = len(keys) - args[i + 5]
        answer = await self._call(self._reserve, keys + markers, args)
        if int(answer[0]) == 0:
            return Outcome(False, 0, (int(answer[2]),), refused=int(answer[1]),
                           busy=bool(int(answer[3])))
        return Outcome(True, int(answer[1]), tuple(int(v) for v in answer[2:]))

    async def settle(self, res_id: str, settles: Sequence[Settle], now: float,
                     entry: SpendEntry | None = None) -> None:
        keys = [f"{self._p}done:{res_id}"]
        markers: list[str] = []
        args: list[Any] = [res_id, 86400, len(settles)]
        for item in settles:
            keys += (f"{self._p}c:{item.counter}", f"{self._p}z:{item.counter}")
            if item.exclusive:
                markers.append(f"{self._p}x:{item.exclusive}")
            args += (item.amount, item.ttl_s,
                     2 * len(settles) + 1 + len(markers) if item.exclusive else 0)
        fields = _spend_fields(entry) if entry is not None else []
        keys += markers
        spans = hashes_of(entry.at) if entry is not None else []
        keys += [self._p + spend_key(span) for span in spans]
        args += (len(spans), *(span.ttl_s for span in spans), len(fields) // 2, *fields)
        await self._call(self._settle, keys, args)

    async def sync(self, worker: str, asks: Sequence[LeaseAsk],
                   batches: Sequence[tuple[str, Sequence[SpendEntry]]], lease_s: float,
                   now: float) -> list[LeaseGrant]:
        keys: list[str] = []
        args: list[Any] = [worker, int(now * 1000), int(lease_s * 1000), len(asks)]
        for ask in asks:
            for bucket in ask.reads:
                keys += (f"{self._p}c:{bucket}", f"{self._p}z:{bucket}")
            args += (len(ask.reads), ask.limit, ask.ttl_s, int(ask.keep), ask.seq, ask.spent,
                     ask.want, ask.need)
        args.append(len(batches))
        for batch, entries in batches:
            keys.append(f"{self._p}done:{batch}")
            hashes = _by_span(entries)
            args.append(len(hashes))
            for (key, ttl_s), fields in hashes.items():
                keys.append(self._p + key)
                args += (ttl_s, len(fields), *(x for pair in fields.items() for x in pair))
        answer = await self._call(self._sync, keys, args)
        return [LeaseGrant(int(answer[i]), int(answer[i + 1]), int(answer[i + 2]))
                for i in range(0, len(answer), 3)]

    async def used(self, reads: Sequence[str], now: float) -> int:
        keys = [k for bucket in reads for k in (f"{self._p}c:{bucket}", f"{self._p}z:{bucket}")]
        return int(await self._call(self._used, keys, [int(now * 1000)]))

    async def spend(self, dimension: str, since: float, until: float) -> list[SpendRow]:
        """Summed from the coarsest hashes that tile the range (periods.covering)."""
        if dimension not in DIMENSIONS:
            raise ValueError(f"dimension must be one of {', '.join(DIMENSIONS)}")
        sums: dict[str, list[int]] = {}
        keys = [self._p + spend_key(span) for span in covering(since, until)]
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.hgetall(key)
                found = await pipe.execute()
        except (RedisError, OSError) as exc:
            raise StoreError(f"redis: {exc}") from exc
        for fields in found:
            _add(sums, fields, dimension)
        rows = [SpendRow(k, *v) for k, v in sums.items()]
        return sorted(rows, key=lambda r: (-r.cost, r.key))

    async def close(self) -> None:
        await self._client.aclose(close_connection_pool=True)
        for sentinel in self._sentinels:
            await sentinel.aclose(close_connection_pool=True)

    async def _call(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        try:
            return await script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            raise StoreError(f"redis: {type(exc).__name__}: {exc}") from exc



def _by_span(entries: Sequence[SpendEntry]) -> dict[tuple[str, int], dict[str, int]]:
    """A batch's ledger sums per spend hash (its day's, hour's and minute's), keyed by
    (hash key without the prefix, how long the hash is kept)."""
    rows: dict[tuple[float, str, str, str, str, str], list[int]] = {}
    for e in entries:  # rows of one minute and key are summed: a hash has one field each
        key = (e.at // 60 * 60, e.consumer, e.group, e.route, e.instance, e.end_user)
        row = rows.get(key)
        if row is None:
            rows[key] = [e.requests, e.input, e.output, e.cached_input, e.cost]
        else:
            row[0] += e.requests
            row[1] += e.input
            row[2] += e.output
            row[3] += e.cached_input
            row[4] += e.cost
    hashes: dict[tuple[str, int], dict[str, int]] = {}
    for (minute, *names), values in rows.items():
        for span in hashes_of(minute):
            fields = hashes.setdefault((spend_key(span), span.ttl_s), {})
            for dimension, name in zip(DIMENSIONS, names, strict=True):
                for what, value in zip(_WHAT, values, strict=True):
                    field = f"{dimension}|{name}|{what}"
                    fields[field] = fields.get(field, 0) + value
    return hashes


def _spend_fields(entry: SpendEntry) -> list[Any]:
    values = (entry.requests, entry.input, entry.output, entry.cached_input, entry.cost)
    fields: list[Any] = []
    for dimension in DIMENSIONS:
        name = getattr(entry, dimension)
        for what, value in zip(_WHAT, values, strict=True):
            fields += (f"{dimension}|{name}|{what}", value)
    return fields


def _add(sums: dict[str, list[int]], fields: dict[bytes, bytes], dimension: str) -> None:
    for raw, value in fields.items():
        dim, _, rest = raw.decode().partition("|")
        if dim != dimension:
            continue
        name, _, what = rest.rpartition("|")
        sums.setdefault(name, [0] * len(_WHAT))[_WHAT.index(what)] += int(value)
