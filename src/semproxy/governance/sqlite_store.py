"""The SQLite store: a host's counters, money budgets and spend ledger, kept across restarts.

One file in WAL mode, shared by every process that opens it (`serve --workers
N`): `policy: local` limits live here by default, so the workers of one host
share them as APISIX's workers share a node's counters. A reservation or a
lease sync is one `BEGIN IMMEDIATE` transaction, so SQLite's write lock makes it
atomic across processes as well as tasks. Each store object owns one connection
on one thread of its own and the event loop only awaits that thread: a
transaction takes tens of microseconds, but another process holding the write
lock can make it wait (up to `busy_timeout_ms`), and that wait must never stall
the loop. One thread also serialises this process's transactions, which is what
SQLite does with writers anyway. Requests reach it through leases
(governance/lease.py): one transaction every few hundred milliseconds per
process, not one per request.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from semproxy.governance.lease import LeaseAsk, LeaseGrant, apply_ask
from semproxy.governance.model import Hold, Outcome, Settle, fit
from semproxy.governance.store import DIMENSIONS, SpendEntry, SpendRow, StoreError

SCHEMA = """
CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, used INTEGER NOT NULL,
                                     expires REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS holds (key TEXT NOT NULL, res TEXT NOT NULL,
                                  amount INTEGER NOT NULL, expires REAL NOT NULL,
                                  PRIMARY KEY (key, res)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS holds_expiry ON holds (expires);
CREATE TABLE IF NOT EXISTS settled (res TEXT PRIMARY KEY, expires REAL NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (key TEXT NOT NULL, worker TEXT NOT NULL,
    hold INTEGER NOT NULL, reported INTEGER NOT NULL, seq INTEGER NOT NULL,
    expires REAL NOT NULL, keep INTEGER NOT NULL, PRIMARY KEY (key, worker)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS leases_expiry ON leases (expires) WHERE hold > 0;
CREATE TABLE IF NOT EXISTS markers (name TEXT PRIMARY KEY, res TEXT NOT NULL,
    expires REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS spend (at REAL NOT NULL, route TEXT, instance TEXT,
    consumer TEXT, grp TEXT, end_user TEXT, requests INTEGER, input INTEGER, output INTEGER,
    cached_input INTEGER, cost INTEGER);
CREATE INDEX IF NOT EXISTS spend_at ON spend (at);
"""
T = TypeVar("T")
SWEEP_EVERY = 1024  # transactions between removals of expired counters
_COLUMN = {"consumer": "consumer", "group": "grp", "route": "route", "instance": "instance",
           "end_user": "end_user"}


class SqliteStore:
    def __init__(self, path: str | Path, name: str = "sqlite", busy_timeout_ms: int = 5000
                 ) -> None:
        self.name = name
        self.path = str(path)
        self._busy_ms = busy_timeout_ms
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="semproxy-sqlite")
        self._db: sqlite3.Connection | None = None
        self._ops = 0

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._call, fn)

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        try:
            db = self._db or self._open()
            return fn(db)
        except sqlite3.Error as exc:
            raise StoreError(f"sqlite {self.path}: {exc}") from exc

    def _open(self) -> sqlite3.Connection:
        """Connect and set the file up. Workers starting together race for it: switching
        to WAL and creating the tables answer "locked" without waiting in SQLite's busy
        handler, so that one step is retried here (on the store's thread, not the loop)."""
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self._busy_ms / 1000
        while True:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                 timeout=self._busy_ms / 1000)
            try:
                _set_up(db, self._busy_ms)
            except sqlite3.OperationalError as exc:
                db.close()
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
                continue
            self._db = db
            return db

    async def reserve(self, res_id: str, holds: Sequence[Hold], low: int, high: int,
                      lease_s: float, now: float) -> Outcome:
        return await self._run(lambda db: self._reserve(db, res_id, holds, low, high,
                                                        now + lease_s, now))

    def _reserve(self, db: sqlite3.Connection, res_id: str, holds: Sequence[Hold], low: int,
                 high: int, until: float, now: float) -> Outcome:
        with _immediate(db):
            self._sweep(db, now)
            for i, hold in enumerate(holds):
                if hold.exclusive and db.execute(
                        "SELECT 1 FROM markers WHERE name = ? AND res != ? AND expires > ?",
                        (hold.exclusive, res_id, now)).fetchone():
                    return Outcome(False, 0, (0,), refused=i, busy=True)
            totals = [_total(db, h.reads) for h in holds]
            outcome = fit(list(holds), totals, low, high)
            if outcome.granted:
                db.executemany("INSERT OR REPLACE INTO markers VALUES (?, ?, ?)",
                               [(h.exclusive, res_id, until) for h in holds if h.exclusive])
                db.executemany(
                    "INSERT OR REPLACE INTO holds VALUES (?, ?, ?, ?)",
                    [(h.counter, res_id, h.fixed + h.per_output * outcome.output, until)
                     for h in holds])
                db.executemany(
                    "INSERT INTO counters VALUES (?, 0, ?) ON CONFLICT(key) DO UPDATE "
                    "SET expires = max(expires, excluded.expires)",
                    [(h.counter, now + h.ttl_s) for h in holds])
            return outcome

    async def settle(self, res_id: str, settles: Sequence[Settle], now: float,
                     entry: SpendEntry | None = None) -> None:
        await self._run(lambda db: self._settle(db, res_id, settles, now, entry))

    def _settle(self, db: sqlite3.Connection, res_id: str, settles: Sequence[Settle],
                now: float, entry: SpendEntry | None) -> None:
        with _immediate(db):
            done = db.execute("INSERT OR IGNORE INTO settled VALUES (?, ?)",
                              (res_id, now + 86400))
            if done.rowcount == 0:
                return  # settled before (a retry after a lost answer)
            for item in settles:
                db.execute("DELETE FROM holds WHERE key = ? AND res = ?", (item.counter, res_id))
                db.execute("INSERT INTO counters VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE "
                           "SET used = used + excluded.used, "
                           "expires = max(expires, excluded.expires)",
                           (item.counter, item.amount, now + item.ttl_s))
                if item.exclusive:
                    db.execute("DELETE FROM markers WHERE name = ? AND res = ?",
                               (item.exclusive, res_id))
            if entry is not None:
                db.executemany(_LEDGER_ROW, [_row(entry)])

    async def sync(self, worker: str, asks: Sequence[LeaseAsk],
                   batches: Sequence[tuple[str, Sequence[SpendEntry]]], lease_s: float,
                   now: float) -> list[LeaseGrant]:
        return await self._run(lambda db: self._sync(db, worker, asks, batches, lease_s, now))

    def _sync(self, db: sqlite3.Connection, worker: str, asks: Sequence[LeaseAsk],
              batches: Sequence[tuple[str, Sequence[SpendEntry]]], lease_s: float,
              now: float) -> list[LeaseGrant]:
        with _immediate(db):
            self._sweep(db, now)
            grants = [_sync_one(db, worker, ask, now + lease_s, now) for ask in asks]
            for batch, entries in batches:
                done = db.execute("INSERT OR IGNORE INTO settled VALUES (?, ?)",
                                  (batch, now + 86400))
                if done.rowcount:
                    db.executemany(_LEDGER_ROW, [_row(e) for e in entries])
            return grants

    async def used(self, reads: Sequence[str], now: float) -> int:
        return await self._run(lambda db: _total(db, reads, now))

    async def spend(self, dimension: str, since: float, until: float) -> list[SpendRow]:
        if dimension not in _COLUMN:
            raise ValueError(f"dimension must be one of {', '.join(DIMENSIONS)}")
        column = _COLUMN[dimension]  # from a fixed table: never text from the caller
        sql = (f"SELECT {column}, sum(requests), sum(input), sum(output), sum(cached_input), "
               f"sum(cost) FROM spend WHERE at >= ? AND at < ? GROUP BY {column} "
               f"ORDER BY sum(cost) DESC, {column}")
        rows = await self._run(lambda db: db.execute(sql, (since, until)).fetchall())
        return [SpendRow(str(r[0]), *(int(v) for v in r[1:])) for r in rows]

    async def close(self) -> None:
        def shut(db: sqlite3.Connection) -> None:
            db.close()
        if self._db is not None:
            await self._run(shut)
            self._db = None
        self._thread.shutdown(wait=True)

    def _sweep(self, db: sqlite3.Connection, now: float) -> None:
        db.execute("DELETE FROM holds WHERE expires <= ?", (now,))
        # A lease its worker stopped syncing: what it held counts as used (the worker
        # may have spent it without reporting), except for concurrency (nothing is used).
        expired = db.execute("SELECT key, hold, keep FROM leases WHERE hold > 0 AND expires <= ?",
                             (now,)).fetchall()
        for key, hold, keep in expired:
            if keep:
                db.execute("UPDATE counters SET used = used + ? WHERE key = ?", (hold, key))
        if expired:
            db.execute("UPDATE leases SET hold = 0 WHERE hold > 0 AND expires <= ?", (now,))
        self._ops += 1
        if self._ops % SWEEP_EVERY == 0:
            db.execute("DELETE FROM counters WHERE expires <= ?", (now,))
            db.execute("DELETE FROM leases WHERE hold = 0 AND key NOT IN "
                       "(SELECT key FROM counters)")
            db.execute("DELETE FROM settled WHERE expires <= ?", (now,))
            db.execute("DELETE FROM markers WHERE expires <= ?", (now,))


def _set_up(db: sqlite3.Connection, busy_ms: int) -> None:
    db.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL: a commit survives a process crash; only an OS crash or power
    # loss may drop the last transactions (a few requests' spend).
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
    db.executescript(SCHEMA)


_LEDGER_ROW = "INSERT INTO spend VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _row(e: SpendEntry) -> tuple[object, ...]:
    return (e.at, e.route, e.instance, e.consumer, e.group, e.end_user, e.requests, e.input,
            e.output, e.cached_input, e.cost)


def _sync_one(db: sqlite3.Connection, worker: str, ask: LeaseAsk, until: float,
              now: float) -> LeaseGrant:
    # One read for the worker's lease, the counter's total and its holders (what
    # `_total` and a count would read in four statements), then at most two writes.
    marks = ",".join("?" * len(ask.reads))
    row = db.execute(
        "SELECT (SELECT hold FROM leases WHERE key = ? AND worker = ?), "
        "(SELECT reported FROM leases WHERE key = ? AND worker = ?), "
        "(SELECT seq FROM leases WHERE key = ? AND worker = ?), "
        f"(SELECT coalesce(sum(used), 0) FROM counters WHERE key IN ({marks})), "
        f"(SELECT coalesce(sum(amount), 0) FROM holds WHERE key IN ({marks})), "
        f"(SELECT coalesce(sum(hold), 0) FROM leases WHERE key IN ({marks})), "
        "(SELECT count(*) FROM leases WHERE key = ? AND hold > 0)",
        (ask.counter, worker) * 3 + ask.reads * 3 + (ask.counter,)).fetchone()
    found, reported, seq = row[0] is not None, row[1] or 0, row[2] or 0
    hold = row[0] or 0
    total = int(row[3]) + int(row[4]) + int(row[5])
    holders = int(row[6])
    done = apply_ask(hold, reported, seq, total, ask)
    if not done.stale:
        db.execute("INSERT INTO counters VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE "
                   "SET used = used + excluded.used, expires = max(expires, excluded.expires)",
                   (ask.counter, done.used, now + ask.ttl_s))
        db.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (ask.counter, worker, done.hold, max(reported, ask.spent), ask.seq, until,
                    int(ask.keep)))
        total += done.used - done.released
        # The count above had this worker's old hold; the row now has the new one.
        holders += (done.hold > 0) - (found and hold > 0)
        hold = done.hold
    return LeaseGrant(hold, ask.limit - total, holders)


def _total(db: sqlite3.Connection, reads: Sequence[str], now: float | None = None) -> int:
    """Use plus every hold (reservations still live, leases) over a window's buckets."""
    marks = ",".join("?" * len(reads))
    used = db.execute(f"SELECT coalesce(sum(used), 0) FROM counters WHERE key IN ({marks})",
                      tuple(reads)).fetchone()[0]
    live = "" if now is None else " AND expires > ?"
    args = tuple(reads) if now is None else (*reads, now)
    held = db.execute(f"SELECT coalesce(sum(amount), 0) FROM holds WHERE key IN ({marks})"
                      f"{live}", args).fetchone()[0]
    leased = db.execute(f"SELECT coalesce(sum(hold), 0) FROM leases WHERE key IN ({marks})",
                        tuple(reads)).fetchone()[0]
    return int(used) + int(held) + int(leased)


class _immediate:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error): the write lock for the whole step."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
