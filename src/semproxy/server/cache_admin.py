"""The response cache's control plane: what it would do with a prompt (`semproxy explain`
and the admin explain endpoint), and purges (the admin API).

It plans the request as the lookup phase would (for the instance that would
serve it, the consumer and the request headers given) and looks it up in the
route's store without joining a flight or writing anything: the same keys,
vectors and hit rule as a live request. Against the in-process store of a
running gateway (the admin endpoint) it sees that worker's entries; the CLI
opens the store apart from any gateway, so it sees entries only in Redis.

A purge removes the entries of one route, one consumer, both, or all, by key
pattern (cache/keys.py `purge_pattern`) in every store the live version uses.
In-process stores are per worker: with several workers a purge reaches the
one that answered; entries in Redis are gone for every worker and replica.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from semproxy.cache.keys import purge_pattern
from semproxy.cache.lookup import EXACT, Hit, Refused
from semproxy.cache.plan import Bypass
from semproxy.cache.stores import CacheStores
from semproxy.config.spec import GatewayConfig
from semproxy.errors import BadRequestError, NotFoundError, UnavailableError
from semproxy.runtime.compile import compile_table
from semproxy.server.cache_answer import HIT_EXACT, HIT_SEMANTIC
from semproxy.server.lookup import MISS, CachePhase
from semproxy.server.pipeline import Version
from semproxy.transport.schemes import SchemeTransport


async def explain_cache(phase: CachePhase, payload: Mapping[str, Any], instance: str,
                        consumer: str | None = None, headers: Mapping[str, str] | None = None
                        ) -> dict[str, Any]:
    """The cache's verdict on `payload` (a Chat Completions body) served by `instance`."""
    conf, rule = phase.conf, phase.spec.rule
    out: dict[str, Any] = {
        "instance": instance, "consumer": consumer, "mode": conf.mode, "store": conf.store,
        "layers": list(conf.layers), "model": phase.spec.model,
        "threshold": rule.threshold if conf.semantic_on else None,
        "same_words": rule.same_words if conf.semantic_on else None,
    }
    made = phase.plan_for(payload, instance, headers or {}, consumer, {})
    if isinstance(made, Bypass):
        return {**out, "status": "BYPASS", "reason": made.reason}
    out["semantic"] = made.partition is not None
    if not made.control.read:
        return {**out, "status": made.status, "reason": "client"}
    found: Hit | Refused | None = await phase.cache.lookup_exact(made)
    if found is None and made.partition is not None:
        vector = await phase.vector(made.text)
        if vector is not None:
            found = await phase.cache.lookup_semantic(made, vector)
    if isinstance(found, Hit):
        status = HIT_EXACT if found.layer == EXACT else HIT_SEMANTIC
        return {**out, "status": status, "layer": found.layer, "age": int(found.age_s),
                "similarity": _rounded(found.similarity)}
    if isinstance(found, Refused):
        return {**out, "status": MISS, "refused": found.reason,
                "similarity": _rounded(found.similarity)}
    return {**out, "status": MISS}


async def explain_offline(config: GatewayConfig, route: str, prompt: str,
                          instance: str | None) -> dict[str, Any]:
    """`semproxy explain`'s cache part: the route's cache opened apart from any gateway
    (`instance`: the semantic pick, else the route's first)."""
    transport, caches = SchemeTransport(), CacheStores()
    try:
        version = Version.of(compile_table(config, transport), transport, caches=caches)
        phase = version.pipelines[route].cache
        assert phase is not None
        serving = instance or phase.route.spec.instances[0].name
        result = await explain_cache(phase, {"model": "auto", "messages": [
            {"role": "user", "content": prompt}]}, serving)
        if phase.conf.store == "memory":
            result["note"] = ("the in-process store of a running gateway is not visible "
                              "here: ask its admin API (POST /admin/routes/ID/explain)")
        return result
    finally:
        await caches.aclose()
        await transport.aclose()


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def render_cache(result: Mapping[str, Any]) -> str:
    """The verdict in a few lines for the terminal."""
    lines = [f"cache ({result['mode']}, {result['store']} store, layers "
             f"{'+'.join(result['layers'])}) on instance {result['instance']}: "
             f"{result['status']}"]
    for name in ("reason", "layer", "age", "similarity", "refused"):
        if result.get(name) is not None:
            lines.append(f"  {name}: {result[name]}")
    if result.get("threshold") is not None:
        lines.append(f"  a rewording needs cosine {result['threshold']} on {result['model']} "
                     f"vectors; a prompt of the same words {result['same_words']}")
    if result.get("note"):
        lines.append(f"  {result['note']}")
    return "\n".join(lines)


async def purge(version: Version, route: str | None, consumer: str | None) -> int:
    """Remove the entries of `route` and/or `consumer` (neither: all); how many went."""
    if route is not None:
        if route not in version.table.by_id:
            raise NotFoundError(f"no route with id {route!r}")
        phase = version.pipelines[route].cache
        if phase is None:
            raise BadRequestError(f"route {route!r} has no ai-cache plugin")
        targets = [phase]
    else:
        targets = [p.cache for p in version.pipelines.values() if p.cache is not None]
    seen: set[tuple[int, str]] = set()
    removed = 0
    for phase in targets:
        where = (id(phase.cache), phase.spec.prefix)
        if where in seen:
            continue
        seen.add(where)
        count = await phase.cache.backend.purge(purge_pattern(phase.spec.prefix, route=route,
                                                              consumer=consumer))
        if count < 0:
            raise UnavailableError("a cache store could not be reached; nothing was purged "
                                   "from it")
        removed += count
    return removed
