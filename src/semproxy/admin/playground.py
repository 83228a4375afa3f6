"""The routing playground: a browser page on the admin listener and the endpoints it calls.

The page (`/ui/`, plain files from `admin/ui/`) carries no data and is the
only thing served without the admin key; the page asks for the key and sends
it as `X-API-KEY` on every call, so it never appears in a URL or a log line.

Batch endpoints take labelled JSONL as the body (the format `semproxy eval`
reads) and run on a router built apart from the live one, so a batch never
fills the live embedding cache or trips its circuit breaker. Applying a proposal
to a config file rewrites only its thresholds, in place (comments and layout
kept, as the download does), then reloads; a config in etcd takes the patched
route through PUT /admin/routes/{id}.
"""

from __future__ import annotations

import asyncio
import copy
import math
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web

from semproxy.admin.examples import MAX_EXAMPLE_CHARS
from semproxy.admin.reload import ConfigWatcher
from semproxy.config.edit import ConfigEditError, set_thresholds
from semproxy.config.masking import mask_secrets, mask_text
from semproxy.config.persist import edit_file
from semproxy.errors import (
    BadRequestError,
    ConfigError,
    ConfigRejected,
    EmbeddingError,
    NotFoundError,
    PayloadTooLargeError,
    UnavailableError,
    UpstreamError,
)
from semproxy.observability.decisions import DecisionLog
from semproxy.protocols.body import parse_object
from semproxy.quality import calibrate as cal
from semproxy.quality.evaluate import Evaluation, evaluate
from semproxy.quality.labelled import LabelledDataError, LabelledPrompt, check_labels, parse_lines
from semproxy.quality.metrics import Confusion
from semproxy.quality.rate import Rate
from semproxy.quality.tuning import Proposal, propose, score_all, thresholds_to_write
from semproxy.runtime.compile import router_for
from semproxy.server.app import Gateway, json_response

MAX_LINES = 5000
MAX_BYTES = 8 << 20
MAX_MISSES = 100
PING_S = 15.0
UI_FILES = {"": ("index.html", "text/html"), "app.js": ("app.js", "text/javascript"),
            "spend.js": ("spend.js", "text/javascript"), "style.css": ("style.css", "text/css")}
UI_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


def is_public(request: web.Request) -> bool:
    """The page's own files: the only admin paths served without the key."""
    return request.method in ("GET", "HEAD") and (request.path == "/ui"
                                                  or request.path.startswith("/ui/"))


class Playground:
    def __init__(self, gateway: Gateway, decisions: DecisionLog,
                 config_path: Path | None = None, watcher: ConfigWatcher | None = None) -> None:
        self.gateway = gateway
        self.decisions = decisions
        self.config_path = config_path  # the file as written, for a download with comments
        self.watcher = watcher

    def mount(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/ui", self.redirect)
        r.add_get("/ui/{name:(app\\.js|spend\\.js|style\\.css)?}", self.page)
        r.add_post("/admin/routes/{id}/eval", self.eval)
        r.add_post("/admin/routes/{id}/calibrate", self.calibrate)
        r.add_post("/admin/routes/{id}/thresholds", self.apply_thresholds)
        r.add_get("/admin/decisions", self.recent)
        r.add_get("/admin/decisions/stream", self.stream)
        r.add_get("/admin/cache/shadow", self.cache_shadow)

    async def redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/ui/")

    async def page(self, request: web.Request) -> web.Response:
        name, kind = UI_FILES[request.match_info["name"]]
        body = (resources.files("semproxy.admin") / "ui" / name).read_bytes()
        return web.Response(body=body, content_type=kind, charset="utf-8", headers=UI_HEADERS)

    async def eval(self, request: web.Request) -> web.Response:
        items = await read_labelled(request)
        async with router_for(self.gateway.config, request.match_info["id"]) as router:
            try:
                result = await evaluate(router, items)
            except LabelledDataError as exc:
                raise BadRequestError(str(exc)) from exc
            except EmbeddingError as exc:
                raise UpstreamError(f"embedding failed: {exc}") from exc
        return json_response(eval_body(result))

    async def calibrate(self, request: web.Request) -> web.Response:
        route_id = request.match_info["id"]
        objective, folds, per_instance = calibrate_options(request.query)
        items = await read_labelled(request)
        config = self.gateway.config
        async with router_for(config, route_id) as router:
            names = router.names
            try:
                check_labels(items, [*names, router.spec.catchall], "labelled data")
                scored = await score_all(router, items)
            except LabelledDataError as exc:
                raise BadRequestError(str(exc)) from exc
            except EmbeddingError as exc:
                raise UpstreamError(f"embedding failed: {exc}") from exc
            # The fit is seconds of numpy on big files: keep the gateway's loop free.
            found = await asyncio.to_thread(propose, router, scored,
                                            [i.text for i in items], cal.objective(objective),
                                            folds)
        spec = next(r for r in config.routes if r.id == route_id)
        written = thresholds_to_write(spec, found.fitted, names, per_instance)
        body = proposal_body(objective, found)
        body["per_instance"] = written
        body.update(await self._patched(route_id, found.fitted.threshold, written))
        body["in_place"] = self.config_path is not None and self.watcher is not None
        return json_response(body)

    async def apply_thresholds(self, request: web.Request) -> web.Response:
        """Write thresholds into the config file in place, validate, then reload.

        Only the thresholds change; comments, order and `${VAR}` references stay
        as written. The edited text must load before it replaces the file.
        """
        if self.config_path is None or self.watcher is None:
            raise BadRequestError("the config is not a file: apply with PUT /admin/routes/{id}")
        route_id = request.match_info["id"]
        threshold, per_instance = parse_thresholds(parse_object(await request.read()))
        route = self.gateway.table.by_id.get(route_id)
        if route is None:
            raise NotFoundError(f"no route with id {route_id!r}")
        unknown = set(per_instance) - {i.name for i in route.spec.instances}
        if unknown:
            raise BadRequestError(f"per_instance: no instance named {', '.join(sorted(unknown))}")
        try:
            config = await edit_file(self.config_path, lambda text: set_thresholds(
                text, route_id, threshold, per_instance))
        except OSError as exc:
            raise UnavailableError(f"config file unavailable: {exc.strerror}") from exc
        except ConfigEditError as exc:
            raise BadRequestError(f"cannot rewrite thresholds: {exc}") from exc
        except ConfigError as exc:
            raise ConfigRejected(exc.errors) from exc
        assert config is not None  # set_thresholds always gives a text
        await self.watcher.reload()
        return json_response({"version": config.version,
                              "applied": self.gateway.table.version == config.version})

    async def _patched(self, route_id: str, threshold: float, per_instance: dict[str, float]
                       ) -> dict[str, Any]:
        """The route to PUT, and the whole config text to download, with these thresholds."""
        document = copy.deepcopy(dict(self.gateway.config.document))
        as_yaml = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
        try:
            patched = set_thresholds(as_yaml, route_id, threshold, per_instance)
        except ConfigEditError as exc:
            raise BadRequestError(f"cannot rewrite thresholds: {exc}") from exc
        route = next(r for r in yaml.safe_load(patched)["routes"] if r.get("id") == route_id)
        text, name = patched, "semproxy.yaml"
        if self.config_path is not None:
            try:
                own = await asyncio.to_thread(self.config_path.read_text, "utf-8")
                text = set_thresholds(own, route_id, threshold, per_instance)
                name = self.config_path.name
            except (OSError, ConfigEditError):
                pass  # the file moved on or has a shape we cannot edit: offer the document
        # Shown to the browser: every credential masked. A PUT of this route with
        # the masks in place keeps the stored values.
        return {"route": mask_secrets(route), "config": {"name": name, "text": mask_text(text)}}

    async def cache_shadow(self, request: web.Request) -> web.Response:
        """Shadow-mode routes: the share of requests that would have hit and the estimated
        share of wrong hits, with intervals, and the last would-hits (this worker)."""
        book = self.gateway.caches.shadow
        counts = book.summary()
        routes = [shadow_row(p.cache.route.spec.id, counts.get(p.cache.route.spec.id))
                  for p in self.gateway.version.pipelines.values()
                  if p.cache is not None and p.cache.shadow]
        return json_response({"routes": routes, "records": list(book.records)})

    async def recent(self, request: web.Request) -> web.Response:
        return json_response({"entries": list(self.decisions.entries),
                              "shadow": self.decisions.shadow_agreement()})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: the buffered decisions, then each new one as it happens."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store",
                                               "X-Accel-Buffering": "no"})
        await response.prepare(request)
        queue = self.decisions.listen()
        # Rows first, then the shadow decisions that complete them (balancer.shadow).
        backlog = [*self.decisions.entries, *self.decisions.shadows]
        try:
            for item in backlog:
                await response.write(sse(item))
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), PING_S)
                except TimeoutError:
                    await response.write(b": ping\n\n")
                    continue
                await response.write(sse(item))
        except ConnectionResetError:  # the page went away
            return response
        finally:
            self.decisions.unlisten(queue)


def shadow_row(route: str, counts: dict[str, Any] | None) -> dict[str, Any]:
    counts = counts or {"requests": 0, "hits": {}, "compared": {}, "wrong": {}}
    hits, compared = sum(counts["hits"].values()), sum(counts["compared"].values())
    return {"route": route, "requests": counts["requests"], "hits": counts["hits"],
            "would_hit": Rate(hits, counts["requests"]).as_dict(),
            "wrong_hits": Rate(sum(counts["wrong"].values()), compared).as_dict(),
            "compared": counts["compared"], "wrong": counts["wrong"]}


def parse_thresholds(body: dict[str, Any]) -> tuple[float, dict[str, float]]:
    """`{"threshold": t, "per_instance": {name: t}}`, every t a number in [-1, 1]."""
    def check(value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or not -1 <= value <= 1:
            raise BadRequestError(f"{where}: threshold must be a number in [-1, 1]")
        return float(value)

    per_instance = body.get("per_instance") or {}
    if not isinstance(per_instance, dict):
        raise BadRequestError("per_instance: expected an object of instance: threshold")
    return check(body.get("threshold"), "threshold"), {
        str(name): check(value, f"per_instance.{name}") for name, value in per_instance.items()}


def sse(item: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(item) + b"\n\n"


def calibrate_options(query: Any) -> tuple[str, int, bool]:
    objective = query.get("objective", "balanced")
    try:
        cal.objective(objective)
        folds = int(query.get("folds", "5"))
    except ValueError as exc:
        raise BadRequestError(str(exc)) from exc
    if not 2 <= folds <= 20:
        raise BadRequestError("folds must be between 2 and 20")
    return objective, folds, query.get("per_instance", "") in ("1", "true")


async def read_labelled(request: web.Request) -> list[LabelledPrompt]:
    """The body as labelled prompts: at most MAX_LINES lines and MAX_BYTES bytes."""
    if (request.content_length or 0) > MAX_BYTES:
        raise PayloadTooLargeError(f"labelled data is limited to {MAX_BYTES >> 20} MiB")
    body = bytearray()
    async for chunk in request.content.iter_any():
        body += chunk
        if len(body) > MAX_BYTES:
            raise PayloadTooLargeError(f"labelled data is limited to {MAX_BYTES >> 20} MiB")
    try:
        lines = [line for line in body.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError as exc:
        raise BadRequestError("labelled data must be UTF-8") from exc
    if len(lines) > MAX_LINES:
        raise PayloadTooLargeError(f"{len(lines)} labelled lines; the playground takes at most "
                                   f"{MAX_LINES} (use `semproxy eval` for more)")
    try:
        return parse_lines(lines, "line")
    except LabelledDataError as exc:
        raise BadRequestError(str(exc)) from exc


def figures(c: Confusion) -> dict[str, dict[str, Any]]:
    """Each headline figure as {value, n, low, high} (and successes for plain rates)."""
    return {name: rate.as_dict() for name, rate in c.rates().items()}


def eval_body(result: Evaluation) -> dict[str, Any]:
    misses = [{"prompt": item.text[:MAX_EXAMPLE_CHARS], "expected": expected, "pick": d.pick,
               "reason": d.reason, "top_score": d.top_score,
               "truncated": len(item.text) > MAX_EXAMPLE_CHARS}
              for item, expected, d in zip(result.items, result.expected, result.decisions,
                                           strict=True)
              if d.pick != expected]
    return {**result.summary(), "thresholds": result.thresholds, "misses": misses[:MAX_MISSES]}


def proposal_body(objective: str, found: Proposal) -> dict[str, Any]:
    return {"objective": objective, "folds": found.folds, "prompts": found.prompts,
            "threshold": found.fitted.threshold, "fold_thresholds": found.fold_thresholds,
            "warnings": found.measured[0][1].warnings(),
            "measured": [{"name": name, **figures(c)} for name, c in found.measured]}
