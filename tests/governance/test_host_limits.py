"""`policy: local` limits hold per host: two real worker processes share one set of counters
(in the host's SQLite file), as APISIX's workers share a node's; before, each process
counted apart and two workers admitted twice the limit."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from tests.governance.plans import document
from tests.governance.workers import open_at_once, take_until_refused

REQUESTS, TOKENS = 300, 40_000
NOW = 1_800_000_000.0 + 100  # 100 s into an hour: every request falls in one window


def run_two(docs: list[dict[str, object]]) -> list[list[dict[str, int]]]:
    """Each document in turn, by the same two worker processes started at once."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(2) as pool:
        runs = []
        for doc in docs:
            start = manager.Barrier(2)
            jobs = [pool.apply_async(take_until_refused, (doc, seed, 100, NOW, start))
                    for seed in (1, 2)]
            runs.append([job.get(timeout=120) for job in jobs])
        return runs


def test_local_request_and_token_limits_hold_across_two_worker_processes(
        tmp_path: Path) -> None:
    requests, tokens = run_two([
        document({"limits": [{"requests": REQUESTS, "window": "hour"}]},
                 governance={"sqlite_path": str(tmp_path / "a.db"), "ledger": "none"}),
        document({"limits": [{"total_tokens": TOKENS, "window": "hour"}]},
                 governance={"sqlite_path": str(tmp_path / "b.db"), "ledger": "none"})])
    admitted = [t["admitted"] for t in requests]
    assert all(n > 20 for n in admitted), admitted  # both workers served
    assert 0.97 * REQUESTS <= sum(admitted) <= REQUESTS, admitted
    assert all(t["admitted"] > 20 for t in tokens), tokens
    assert 0.97 * TOKENS <= sum(t["tokens"] for t in tokens) <= TOKENS, tokens


def test_workers_opening_a_new_sqlite_file_together_all_succeed(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(2) as pool:
        for i in range(20):  # switching to WAL used to answer "locked" to the slower one
            start = manager.Barrier(2)
            jobs = [pool.apply_async(open_at_once, (str(tmp_path / f"{i}.db"), start))
                    for _ in range(2)]
            assert [job.get(timeout=60) for job in jobs] == ["ok", "ok"]
