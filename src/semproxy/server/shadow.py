"""Shadow routing: a route's shadow table decides every request, and never serves.

A request is served exactly as without a shadow. When it is over, the handler
hands (route, routed text, serving pick, request id) to the gateway's
`ShadowRunner`: a bounded queue drained by one background task, which makes
the shadow decision, counts it (picks, agreement with the serving pick) and
writes one `semproxy.shadow` log line. A full queue drops the job and counts
it, so shadow work can never slow serving down; an embedding failure in the
shadow is counted and otherwise ignored.

Debug mode: when the route exposes scores (`expose_scores` or `debug_headers`)
the shadow decision is made inline, before the response, so it can go out in
`X-AI-Shadow-Route` and in the access line. That costs one more decision on the
request path, which is why it is tied to the debug switches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from semproxy.observability.logging import log_line
from semproxy.observability.observer import RequestObserver
from semproxy.semantic.decision import Decision, fallback
from semproxy.semantic.query import RoutingInput
from semproxy.server.exchange import Exchange
from semproxy.server.routes import RouteState

log = logging.getLogger("semproxy.shadow")

QUEUE_CAP = 256  # per gateway (per worker): pending shadow decisions beyond it are dropped


@dataclass(slots=True)
class ShadowJob:
    route: RouteState
    text: str
    serving: str
    request_id: str


async def shadow_decision(route: RouteState, text: str) -> Decision:
    """The shadow table's decision on `text`; a failure is a decision without scores."""
    assert route.shadow is not None
    try:
        decision, _ = await route.shadow.route(RoutingInput(text))
    except Exception:  # fail-open: the shadow must never fail (or log a traceback for) a request
        return fallback(route.shadow.spec.catchall, "embedding_error")
    return decision


def shadow_fields(decision: Decision) -> dict[str, object]:
    """`shadow_pick` and `shadow_score` (None when the shadow could not score)."""
    top = decision.top_score
    return {"shadow_pick": decision.pick, "shadow_score": None if top is None else round(top, 4),
            "shadow_reason": decision.reason}


class ShadowRunner:
    """The gateway's one shadow queue and the task that drains it."""

    def __init__(self, observer: RequestObserver, cap: int = QUEUE_CAP) -> None:
        self.observer = observer
        self.queue: asyncio.Queue[ShadowJob] = asyncio.Queue(cap)
        self._task: asyncio.Task[None] | None = None

    def after(self, exchange: Exchange) -> None:
        """The request is over: report its inline shadow decision, or queue one."""
        route, parsed = exchange.route, exchange.parsed
        if route is None or route.shadow is None or not exchange.attempts:
            return
        serving = exchange.attempts[0].instance  # the balancer's pick, before any failover
        if exchange.shadow is not None:
            self.report(route, exchange.request_id, serving, exchange.shadow)
            return
        if parsed is None or not parsed.text:
            return
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain())
        try:
            self.queue.put_nowait(ShadowJob(route, parsed.text, serving, exchange.request_id))
        except asyncio.QueueFull:
            self.observer.on_shadow_dropped(route.spec.id)

    async def _drain(self) -> None:
        while True:
            job = await self.queue.get()
            decision = await shadow_decision(job.route, job.text)
            self.report(job.route, job.request_id, job.serving, decision)

    def report(self, route: RouteState, request_id: str, serving: str,
               decision: Decision) -> None:
        self.observer.on_shadow(route.spec.id, serving, decision)
        if log.isEnabledFor(logging.INFO):
            log_line(log, logging.INFO, f"{route.spec.id} {request_id} shadow {decision.pick}",
                     {"request_id": request_id, "route": route.spec.id, "serving_pick": serving,
                      **shadow_fields(decision),
                      "agree": None if not decision.ranking else decision.pick == serving})

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
