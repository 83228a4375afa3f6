"""The last N routing decisions of this worker, kept in memory for the admin playground.

A `RequestObserver`: `on_semantic` notes the decision, `on_response` (same
request, same task) completes it with the served instance, status and
latency and appends it to a ring buffer. Listeners (the live SSE feed) get
each new entry through a bounded queue; a listener that falls behind loses
entries rather than slowing requests down. Prompt text is kept only for routes
whose `logging.payloads` is on (the handler passes it only then).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from semproxy.semantic.decision import Decision

Entry = dict[str, Any]
# seq, time, route, instance, status, seconds, decision, prompt: kept as a tuple and
# turned into an `Entry` only when someone reads it (most rows never are).
Row = tuple[int, float, str, str, int, float, "Decision | None", "str | None"]
LISTENER_BACKLOG = 1000
PROMPT_CHARS = 500  # enough to recognise a prompt in the live view


class DecisionLog:
    def __init__(self, size: int = 200) -> None:
        self._rows: deque[Row] = deque(maxlen=size)
        self._listeners: set[asyncio.Queue[Entry]] = set()
        self._seq = itertools.count(1)
        # The decision of the request running in this task, until its response.
        self._pending: contextvars.ContextVar[tuple[Decision, str | None] | None] = \
            contextvars.ContextVar("semproxy_pending_decision", default=None)

    def listen(self) -> asyncio.Queue[Entry]:
        queue: asyncio.Queue[Entry] = asyncio.Queue(LISTENER_BACKLOG)
        self._listeners.add(queue)
        return queue

    def unlisten(self, queue: asyncio.Queue[Entry]) -> None:
        self._listeners.discard(queue)

    @property
    def entries(self) -> list[Entry]:
        """The kept decisions, oldest first."""
        return [entry(*row) for row in self._rows]

    def record(self, row: Row) -> None:
        self._rows.append(row)
        if self._listeners:
            built = entry(*row)
            for queue in self._listeners:
                if not queue.full():
                    queue.put_nowait(built)

    # -- RequestObserver ---------------------------------------------------
    def on_semantic(self, route: str, decision: Decision, prompt: str | None = None) -> None:
        self._pending.set((decision, prompt))

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Mapping[str, int] | None,
                    protocol: str = "chat") -> None:
        pending = self._pending.get()
        if pending is not None:
            self._pending.set(None)
        if route == "-":  # no route matched: nothing was routed
            return
        decision, prompt = pending if pending is not None else (None, None)
        self.record((next(self._seq), time.time(), route, instance, status, seconds, decision,
                     prompt))

    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        pass

    def on_fallback(self, route: str, source: str, target: str, cause: str) -> None:
        pass

    def on_embedding(self, route: str, seconds: float, decision_cached: bool | None) -> None:
        pass

    def on_embedding_cache(self, hit: bool) -> None:
        pass

    def on_health(self, route: str, instance: str, healthy: bool) -> None:
        pass


def entry(seq: int, at: float, route: str, instance: str, status: int, seconds: float,
          decision: Decision | None, prompt: str | None = None) -> Entry:
    top = None if decision is None else decision.top_score
    row: Entry = {
        "seq": seq, "at": round(at, 3), "route": route,
        "pick": instance if decision is None else decision.pick,
        "instance": instance, "status": status,
        "reason": None if decision is None else decision.reason,
        "top_score": None if top is None else round(top, 4),
        "context": None if decision is None or not decision.context else list(decision.context),
        "latency_ms": round(seconds * 1000, 1),
    }
    if prompt is not None:
        row["prompt"] = prompt[:PROMPT_CHARS]
        # The playground offers "add as example" only for a prompt it has whole.
        row["prompt_truncated"] = len(prompt) > PROMPT_CHARS
    return row
