"""Shadow mode (`mode: shadow`): what the cache would have done, measured on live traffic.

A route in shadow mode serves every request from its upstream, as without a
cache, but looks each one up and stores each complete answer as the cache
would. A request that would have hit is recorded, and once its fresh answer is
in, the stored answer it would have been given is compared with it: the
cosine of the two answers' texts under the in-process model. An answer farther
than `shadow_threshold` from the fresh one counts as a wrong hit, so the
operator sees, per route, the share of requests that would hit and an estimate
of the share of hits that would have been wrong, before the cache answers
anyone.

The estimate has limits the docs spell out: two right answers worded apart
can score under the bar (the exact layer's would-hits, the same question asked
again, show how far apart this route's upstream words the same answer), and a
wrong number or name in an otherwise alike answer scores above it.

`ShadowBook` keeps this worker's counts per route and its last records, for
the metrics, the access line and the playground's Cache view.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semproxy.embeddings import Embedder

MAX_COMPARED_CHARS = 4096  # an answer's head is enough to tell what it answers
RECORDS = 200


@dataclass(slots=True)
class ShadowCounts:
    """One route's shadow counts: requests looked up, would-hits per layer, and of the
    compared would-hits per layer, how many fell under the bar (wrong)."""

    requests: int = 0
    hits: dict[str, int] = field(default_factory=dict)
    compared: dict[str, int] = field(default_factory=dict)
    wrong: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "hits": dict(self.hits),
                "compared": dict(self.compared), "wrong": dict(self.wrong)}


def answer_text(completion: dict[str, Any]) -> str:
    """The text an answer gives (its first choice's content, or its tool calls)."""
    choices = completion.get("choices") or [{}]
    first = choices[0] if isinstance(choices[0], dict) else {}
    found = first.get("message")
    message: dict[str, Any] = found if isinstance(found, dict) else {}
    text = message.get("content")
    if isinstance(text, str) and text:
        return text[:MAX_COMPARED_CHARS]
    calls = message.get("tool_calls") or ()
    return " ".join(str((c.get("function") or {}).get("arguments", "")) for c in calls
                    if isinstance(c, dict))[:MAX_COMPARED_CHARS]


async def answer_similarity(embedder: Embedder, a: dict[str, Any], b: dict[str, Any]
                            ) -> float | None:
    """The cosine of two answers' texts; None when either has no text to compare."""
    texts = [answer_text(a), answer_text(b)]
    if not all(t.strip() for t in texts):
        return None
    if texts[0] == texts[1]:
        return 1.0
    vectors = np.asarray(await embedder.embed(texts), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    if not np.all(norms > 0):
        return None
    return float(vectors[0] @ vectors[1] / (norms[0] * norms[1]))


class ShadowBook:
    """This worker's shadow counts per route, and its last `size` would-hits."""

    def __init__(self, size: int = RECORDS) -> None:
        self.routes: dict[str, ShadowCounts] = {}
        self.records: deque[dict[str, Any]] = deque(maxlen=size)

    def looked_up(self, route: str) -> None:
        self.routes.setdefault(route, ShadowCounts()).requests += 1

    def would_hit(self, route: str, layer: str) -> None:
        counts = self.routes.setdefault(route, ShadowCounts()).hits
        counts[layer] = counts.get(layer, 0) + 1

    def compared(self, route: str, layer: str, wrong: bool, record: dict[str, Any]) -> None:
        counts = self.routes.setdefault(route, ShadowCounts())
        counts.compared[layer] = counts.compared.get(layer, 0) + 1
        if wrong:
            counts.wrong[layer] = counts.wrong.get(layer, 0) + 1
        self.records.append({"at": round(time.time(), 3), "route": route, "layer": layer,
                             "wrong": wrong, **record})

    def summary(self) -> dict[str, dict[str, Any]]:
        return {route: counts.as_dict() for route, counts in self.routes.items()}
