"""Health of the instances of one route, fed by passive observation and active probes.

Two independent opinions are combined per instance:

* passive: a circuit breaker driven by the outcomes of real requests. ``failures``
  counted failures within a sliding ``window`` open it for ``cooldown`` seconds;
  then it is half-open and exactly one request may probe the instance.
* active: the verdict of `ActiveChecker`, which holds until the checker changes it.

An instance is healthy only when both opinions say so. The state never sleeps and
never does I/O: time comes from the injected clock, so tests drive it by hand.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from semproxy.config.schema import PassiveChecks

Listener = Callable[[str, bool], None]
Source = Literal["active", "passive"]
Status = Literal["healthy", "unhealthy", "probing"]


@dataclass(slots=True)
class _Instance:
    passive: PassiveChecks
    counted: frozenset[int]  # statuses that count as passive failures
    failures: deque[float] = field(default_factory=deque)
    open_until: float | None = None  # passive breaker open (or half-open once passed)
    probe_granted_at: float | None = None  # a half-open probe is in flight
    active_down: bool = False


class HealthState:
    """Per-route instance health shared by the request path and the active checker.

    ``passive`` is one setting for every name, or a setting per name (names not
    in the mapping use the defaults). ``listener(name, healthy)`` is called
    synchronously on every change of `is_healthy`; it runs on the request path,
    so it must be cheap and must not raise.
    """

    def __init__(
        self,
        names: Sequence[str],
        passive: PassiveChecks | Mapping[str, PassiveChecks] | None = None,
        clock: Callable[[], float] = time.monotonic,
        listener: Listener | None = None,
    ) -> None:
        self._clock = clock
        self._listener = listener
        self._instances = {name: _new_instance(_setting(passive, name)) for name in names}
        # Names whose `is_healthy` is False, kept by `_update` (the only place it
        # changes): while it is empty, the per-request health reads are one check.
        self._unhealthy: set[str] = set()

    # -- reads -------------------------------------------------------------

    def is_healthy(self, name: str) -> bool:
        """Both opinions say healthy. A pure read: never grants a half-open probe."""
        inst = self._instances[name]
        return not inst.active_down and inst.open_until is None

    def is_usable(self, name: str) -> bool:
        """May a request be sent to ``name`` now?

        Healthy instances always are. Once a passive cool-down has elapsed, the
        first caller gets True and is the probe; later callers get False until the
        probe's outcome is recorded.
        """
        inst = self._instances[name]
        if inst.active_down or inst.open_until is None:
            return not inst.active_down
        if not self._may_probe(inst):
            return False
        inst.probe_granted_at = self._clock()
        return True

    def unusable(self, names: Iterable[str]) -> set[str]:
        """The subset of ``names`` to skip now, or an empty set if that is all of them.

        Skipped are the unhealthy instances that are not due a half-open probe. A
        pure read: an instance due a probe stays a candidate, and the request that
        actually sends to it takes the probe with `claim`. When every candidate
        looks down, health state may simply be stale; failing the request outright
        would be worse than trying them all anyway.
        """
        if not self._unhealthy:
            return set()
        names = list(names)
        down = {name for name in names if not self._is_candidate(self._instances[name])}
        return set() if len(down) == len(names) else down

    def claim(self, name: str) -> None:
        """A request is about to be sent to ``name``: if it is due a probe, this is the probe.

        Unlike `is_usable` this never refuses: the caller has already decided.
        """
        inst = self._instances[name]
        if not inst.active_down and inst.open_until is not None and self._may_probe(inst):
            inst.probe_granted_at = self._clock()

    def snapshot(self) -> dict[str, Status]:
        """name -> "healthy" | "unhealthy" | "probing" (half-open), for metrics and admin."""
        return {name: self._status(inst) for name, inst in self._instances.items()}

    # -- passive outcomes --------------------------------------------------

    def record_success(self, name: str) -> None:
        """A request to ``name`` succeeded. Closes the breaker if it was the probe."""
        inst = self._instances[name]
        if inst.probe_granted_at is not None:
            self._update(name, lambda: self._close(inst))

    def record_failure(self, name: str, cause: str) -> None:
        """A request to ``name`` failed; ``cause`` is "http_503", "timeout", "connect", ...

        An ``http_NNN`` cause whose status is not in ``passive.http_statuses`` says
        the instance answered, so it counts as a success for health purposes.
        """
        if not self._counts(name, cause):
            self.record_success(name)
            return
        inst = self._instances[name]
        if inst.probe_granted_at is not None:
            self._update(name, lambda: self._open(inst))
        elif inst.open_until is None:
            self._update(name, lambda: self._count_failure(inst))
        # Otherwise the breaker is already open: a late failure of a request sent
        # before it tripped neither extends nor shortens the cool-down.

    # -- direct marks ------------------------------------------------------

    def mark(self, name: str, healthy: bool, source: Source = "active") -> None:
        """Set one opinion directly.

        ``active`` marks hold until the next active mark (no cool-down expiry);
        ``passive`` marks open the breaker for a cool-down, or close it.
        """
        inst = self._instances[name]
        if source == "active":
            self._update(name, lambda: self._set_active(inst, healthy))
        else:
            self._update(name, lambda: self._close(inst) if healthy else self._open(inst))

    # -- internals ---------------------------------------------------------

    def _update(self, name: str, change: Callable[[], None]) -> None:
        """Apply ``change`` and tell the listener if it flipped `is_healthy`."""
        before = self.is_healthy(name)
        change()
        after = self.is_healthy(name)
        if after:
            self._unhealthy.discard(name)
        else:
            self._unhealthy.add(name)
        if before != after and self._listener is not None:
            self._listener(name, after)

    @staticmethod
    def _set_active(inst: _Instance, healthy: bool) -> None:
        inst.active_down = not healthy

    def _counts(self, name: str, cause: str) -> bool:
        kind, _, code = cause.partition("_")
        if kind != "http" or not code.isdigit():
            return True  # timeouts, refused connections and unknown causes all count
        return int(code) in self._instances[name].counted

    def _count_failure(self, inst: _Instance) -> None:
        now = self._clock()
        inst.failures.append(now)
        while inst.failures and inst.failures[0] <= now - inst.passive.window:
            inst.failures.popleft()
        if len(inst.failures) >= inst.passive.failures:
            self._open(inst)

    def _open(self, inst: _Instance) -> None:
        inst.open_until = self._clock() + inst.passive.cooldown
        inst.probe_granted_at = None
        inst.failures.clear()

    def _close(self, inst: _Instance) -> None:
        inst.open_until = None
        inst.probe_granted_at = None
        inst.failures.clear()

    def _may_probe(self, inst: _Instance) -> bool:
        now = self._clock()
        if inst.open_until is None or now < inst.open_until:
            return False
        # A probe whose outcome is never recorded (client gone, caller picked
        # another instance) would otherwise keep the instance out forever, so a
        # grant lapses after one cool-down and the next caller may probe.
        granted = inst.probe_granted_at
        return granted is None or now >= granted + inst.passive.cooldown

    def _is_candidate(self, inst: _Instance) -> bool:
        """Healthy, or down only passively with its probe due. Pure: grants nothing."""
        if inst.active_down:
            return False
        return inst.open_until is None or self._may_probe(inst)

    def _status(self, inst: _Instance) -> Status:
        if inst.active_down:
            return "unhealthy"
        if inst.open_until is None:
            return "healthy"
        return "probing" if self._clock() >= inst.open_until else "unhealthy"


def _setting(passive: PassiveChecks | Mapping[str, PassiveChecks] | None, name: str
             ) -> PassiveChecks:
    if isinstance(passive, PassiveChecks):
        return passive
    return (passive or {}).get(name) or PassiveChecks()


def _new_instance(passive: PassiveChecks) -> _Instance:
    return _Instance(passive, frozenset(passive.http_statuses))
