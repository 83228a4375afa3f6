"""The one contract every balancer implements.

A picker answers a single question: of these candidate instances, which one
should serve the next attempt? It never retries, sleeps or performs I/O; the
failover loop in the server calls it again with a growing ``exclude`` set.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol


class Picker(Protocol):
    """Choose one instance name for a request.

    ``candidates`` are instance names the caller is willing to use (usually
    the healthy ones); ``exclude`` are names already tried for this request.
    The result is a member of ``candidates`` that is not in ``exclude``, or
    ``None`` when no such name is usable. Names the picker was not built with,
    or built with weight 0, are never returned.
    """

    def pick(
        self, candidates: Sequence[str], *, key: str | None, exclude: Collection[str]
    ) -> str | None: ...
