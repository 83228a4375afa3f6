"""Config documents with limits, compiled to plans and governors (shared by the tests)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from semproxy.config.loader import load_data
from semproxy.governance.governor import Governor
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.plan import GovernancePlan


class Clock:
    """An injected clock: tests move time by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def document(limiting: dict[str, Any] | None = None, prices: bool = True,
             consumers: list[dict[str, Any]] | None = None,
             groups: list[dict[str, Any]] | None = None, **root: Any) -> dict[str, Any]:
    pricing = {"input": 2.0, "output": 8.0, "cached_input": 0.5}
    instances = [{"name": n, "provider": "echo", "weight": 1, "options": {"model": n},
                  **({"pricing": pricing} if prices else {})} for n in ("big", "small")]
    plugins: dict[str, Any] = {"ai-proxy-multi": {"instances": instances}}
    if limiting is not None:
        plugins["ai-rate-limiting"] = limiting
    doc: dict[str, Any] = {"routes": [{"id": "r", "uri": "/v1/*", "plugins": plugins}], **root}
    if consumers is not None:
        doc["consumers"] = consumers
    if groups is not None:
        doc["consumer_groups"] = groups
    return doc


def plan_of(doc: dict[str, Any]) -> GovernancePlan:
    plan = load_data(doc).governance
    assert plan is not None
    return plan


def governor(doc: dict[str, Any], clock: Clock, tmp_sqlite: str | None = None) -> Governor:
    # Local limits count per host in the SQLite file: never the working directory's.
    path = tmp_sqlite or str(Path(tempfile.mkdtemp(prefix="semproxy-gov-")) / "spend.db")
    doc.setdefault("governance", {}).setdefault("sqlite_path", path)
    plan = plan_of(doc)
    return Governor(plan, StoreSet.for_plan(plan), clock)
