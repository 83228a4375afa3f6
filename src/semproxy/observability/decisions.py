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
from typing import Any

from semproxy.observability.observer import DecisionView, RequestObserver, shadow_fields
from semproxy.types import Usage

Entry = dict[str, Any]
# seq, time, route, instance, status, seconds, decision, prompt, budget: kept as a tuple
# and turned into an `Entry` only when someone reads it (most rows never are).
Budget = tuple[int, str, str]  # tier, the semantic pick, the instance the budget rule chose
Row = tuple[int, float, str, str, int, float, "DecisionView | None", "str | None",
            "Budget | None"]
LISTENER_BACKLOG = 1000
SHADOW_KEYS = ("agree", "disagree", "errors", "dropped")
PROMPT_CHARS = 500  # enough to recognise a prompt in the live view


class DecisionLog(RequestObserver):
    def __init__(self, size: int = 200) -> None:
        self._rows: deque[Row] = deque(maxlen=size)
        self._listeners: set[asyncio.Queue[Entry]] = set()
        self._seq = itertools.count(1)
        # balancer.shadow: route -> [agree, disagree, not scored, dropped], and the
        # latest shadow decisions (they complete after their request's row).
        self.shadow_counts: dict[str, list[int]] = {}
        self._shadows: deque[Entry] = deque(maxlen=size)
        # The decision of the request running in this task, until its response.
        self._pending: contextvars.ContextVar[
            tuple[DecisionView, str | None, Budget | None] | None] = \
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

    @property
    def shadows(self) -> list[Entry]:
        """The kept shadow decisions, oldest first."""
        return list(self._shadows)

    def shadow_agreement(self) -> dict[str, dict[str, int]]:
        return {route: dict(zip(SHADOW_KEYS, counts, strict=True))
                for route, counts in self.shadow_counts.items()}

    def _publish(self, built: Entry) -> None:
        for queue in self._listeners:
            if not queue.full():
                queue.put_nowait(built)

    def record(self, row: Row) -> None:
        self._rows.append(row)
        if self._listeners:
            built = entry(*row)
            for queue in self._listeners:
                if not queue.full():
                    queue.put_nowait(built)

    # -- RequestObserver ---------------------------------------------------
    def on_semantic(self, route: str, decision: DecisionView, prompt: str | None = None
                    ) -> None:
        self._pending.set((decision, prompt, None))

    def on_budget(self, route: str, tier: int, pick: str, served: str) -> None:
        pending = self._pending.get()
        if pending is not None:
            self._pending.set((pending[0], pending[1], (tier, pick, served)))

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Usage | None, protocol: str = "chat") -> None:
        pending = self._pending.get()
        if pending is not None:
            self._pending.set(None)
        if route == "-":  # no route matched: nothing was routed
            return
        decision, prompt, budget = pending if pending is not None else (None, None, None)
        self.record((next(self._seq), time.time(), route, instance, status, seconds, decision,
                     prompt, budget))

    def on_shadow(self, route: str, serving: str, decision: DecisionView) -> None:
        counts = self.shadow_counts.setdefault(route, [0, 0, 0, 0])
        scored = bool(decision.ranking)
        counts[0 if scored and decision.pick == serving else 1 if scored else 2] += 1
        built: Entry = {"kind": "shadow", "at": round(time.time(), 3), "route": route,
                        "serving": serving, **shadow_fields(decision),
                        "agree": decision.pick == serving if scored else None,
                        "counts": dict(zip(SHADOW_KEYS, counts, strict=True))}
        self._shadows.append(built)
        self._publish(built)

    def on_shadow_dropped(self, route: str) -> None:
        self.shadow_counts.setdefault(route, [0, 0, 0, 0])[3] += 1


def entry(seq: int, at: float, route: str, instance: str, status: int, seconds: float,
          decision: DecisionView | None, prompt: str | None = None,
          budget: Budget | None = None) -> Entry:
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
    if budget is not None:  # budget-aware routing read the decision again
        row["budget"] = {"tier": budget[0], "pick": budget[1], "served": budget[2],
                         "moved": budget[1] != budget[2]}
    if prompt is not None:
        row["prompt"] = prompt[:PROMPT_CHARS]
        # The playground offers "add as example" only for a prompt it has whole.
        row["prompt_truncated"] = len(prompt) > PROMPT_CHARS
    return row
