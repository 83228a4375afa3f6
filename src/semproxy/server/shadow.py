"""Shadow routing: a route's shadow table decides every request, and never serves.

A request is served exactly as without a shadow. When it is over, the account
phase hands (route, routed text, serving pick, request id) to the gateway's
`ShadowRunner`: a bounded queue drained by one background task, which makes
the shadow decisions, counts them (picks, agreement with the serving pick) and
writes one `semproxy.shadow` log line each. An embedding failure in the shadow
is counted and otherwise ignored; a task that dies of anything else is logged
with its traceback and started again by the next request.

The shadow shares the worker's CPU with serving, so it is bounded twice: it
decides what is queued in small batches (one embedding call for up to `BATCH`
texts and `BATCH_CHARS` characters, cheaper per text than one call each), and
after each batch it rests so its busy time stays under `SHARE` of the wall
clock. Under load the queue then fills and further jobs are dropped and
counted: the shadow samples less traffic instead of taking CPU from requests.

Debug mode: when the route exposes scores (`expose_scores` or `debug_headers`)
the shadow decision is made inline, before the response, so it can go out in
`X-AI-Shadow-Route` and in the access line. That costs one more decision on the
request path, which is why it is tied to the debug switches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from semproxy.errors import EmbeddingError
from semproxy.observability.logging import log_line
from semproxy.observability.observer import RequestObserver, shadow_fields
from semproxy.runtime.routes import RouteState
from semproxy.semantic.decision import Decision, to_catchall
from semproxy.semantic.query import RoutingInput
from semproxy.server.exchange import Exchange

log = logging.getLogger("semproxy.shadow")

QUEUE_CAP = 256  # per gateway (per worker): pending shadow decisions beyond it are dropped
BATCH = 64  # texts decided with one embedding call
# ...and at most this many characters, so the local model embeds the batch on the
# event loop in well under a millisecond: a larger batch goes to a worker thread,
# whose pure-Python tokenising then contends with the loop for the GIL.
BATCH_CHARS = 1024
SHARE = 0.05  # the most of the wall clock the shadow task may be busy
MAX_REST = 1.0  # s; a batch that mostly waited on a slow remote endpoint rests no longer


@dataclass(slots=True)
class ShadowJob:
    route: RouteState
    query: RoutingInput
    serving: str
    request_id: str
    observer: RequestObserver  # the request's: the one listening when it was served


def shadow_input(route: RouteState, exchange: Exchange) -> RoutingInput | None:
    """What the shadow decides on: the routed text (and, when the shadow reads
    conversations, the earlier user turns), or None when there is no user text."""
    parsed = exchange.parsed
    if route.shadow is None or parsed is None or parsed.query is None \
            or not parsed.query.text:
        return None
    messages = parsed.payload.get("messages", ())
    return route.shadow.query(messages if isinstance(messages, list) else (), parsed.query)


async def shadow_decision(route: RouteState, query: RoutingInput) -> Decision:
    """The shadow table's decision on `query`; a failure is a decision without scores."""
    assert route.shadow is not None
    try:
        decision, _ = await route.shadow.route(query)
    except Exception:  # fail-open: the shadow must never fail (or log a traceback for) a request
        return to_catchall(route.shadow.spec.catchall, "embedding_error")
    return decision


async def shadow_decisions(route: RouteState, queries: Sequence[RoutingInput]
                           ) -> list[Decision]:
    """The shadow table's decisions on many inputs, with one embedding call."""
    assert route.shadow is not None
    try:
        return await route.shadow.route_many(queries)
    except EmbeddingError as exc:
        reason = exc.reason
    except Exception:  # fail-open: the shadow must never disturb the gateway
        reason = "embedding_error"
    return [to_catchall(route.shadow.spec.catchall, reason) for _ in queries]


class ShadowRunner:
    """The gateway's one shadow queue and the task that drains it."""

    def __init__(self, cap: int = QUEUE_CAP) -> None:
        self.queue: asyncio.Queue[ShadowJob] = asyncio.Queue(cap)
        self._task: asyncio.Task[None] | None = None
        self._carry: ShadowJob | None = None  # taken, but over the last batch's size

    def after(self, exchange: Exchange) -> None:
        """The request is over: report its inline shadow decision, or queue one."""
        route = exchange.route
        if route is None or route.shadow is None or not exchange.attempts:
            return
        serving = exchange.attempts[0].instance  # the balancer's pick, before any failover
        if exchange.shadow is not None:
            self.report(ShadowJob(route, RoutingInput(""), serving, exchange.request_id,
                                  exchange.observer), exchange.shadow)
            return
        query = shadow_input(route, exchange)
        if query is None:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())
            self._task.add_done_callback(_report_death)
        try:
            self.queue.put_nowait(ShadowJob(route, query, serving, exchange.request_id,
                                            exchange.observer))
        except asyncio.QueueFull:
            exchange.observer.on_shadow_dropped(route.spec.id)

    async def _drain(self) -> None:
        while True:
            jobs = await self._batch()
            started = time.monotonic()
            for route, group in _by_route(jobs):
                decisions = await shadow_decisions(route, [j.query for j in group])
                for job, decision in zip(group, decisions, strict=True):
                    self.report(job, decision)
            await asyncio.sleep(min(MAX_REST, (time.monotonic() - started) * (1 / SHARE - 1)))

    async def _batch(self) -> list[ShadowJob]:
        first, self._carry = self._carry or await self.queue.get(), None
        jobs, chars = [first], len(first.query.text)
        while len(jobs) < BATCH and not self.queue.empty():
            job = self.queue.get_nowait()
            chars += len(job.query.text)
            if chars > BATCH_CHARS:
                self._carry = job
                break
            jobs.append(job)
        return jobs

    def report(self, job: ShadowJob, decision: Decision) -> None:
        route, request_id, serving = job.route, job.request_id, job.serving
        job.observer.on_shadow(route.spec.id, serving, decision)
        if log.isEnabledFor(logging.INFO):
            log_line(log, logging.INFO, f"{route.spec.id} {request_id} shadow {decision.pick}",
                     {"request_id": request_id, "route": route.spec.id, "serving_pick": serving,
                      **shadow_fields(decision), "shadow_reason": decision.reason,
                      "agree": None if not decision.ranking else decision.pick == serving})

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():  # a dead one was reported already
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _report_death(task: asyncio.Task[None]) -> None:
    """A drain task that ended other than by `aclose`: say so, loudly, with the cause
    (the next request starts a new one)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("shadow decisions stopped: %r; a new task starts with the next request",
                  task.exception(), exc_info=task.exception())


def _by_route(jobs: list[ShadowJob]) -> list[tuple[RouteState, list[ShadowJob]]]:
    """Jobs grouped by route (state objects, compared by identity), in queue order."""
    groups: dict[int, tuple[RouteState, list[ShadowJob]]] = {}
    for job in jobs:
        groups.setdefault(id(job.route), (job.route, []))[1].append(job)
    return list(groups.values())
