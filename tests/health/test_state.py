"""HealthState: passive breaker, half-open probe, active marks, listener, snapshot."""

from __future__ import annotations

from semproxy.config.schema import PassiveChecks
from semproxy.health.state import HealthState

NAMES = ["a", "b"]
PASSIVE = PassiveChecks(failures=3, window=10.0, cooldown=5.0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make(listener: list[tuple[str, bool]] | None = None) -> tuple[HealthState, FakeClock]:
    clock = FakeClock()
    events = listener if listener is not None else []
    state = HealthState(NAMES, PASSIVE, clock=clock, listener=lambda n, h: events.append((n, h)))
    return state, clock


def trip(state: HealthState, name: str = "a") -> None:
    for _ in range(3):
        state.record_failure(name, "http_503")


def test_trips_after_n_failures_within_window() -> None:
    state, clock = make()
    state.record_failure("a", "timeout")
    clock.advance(4)
    state.record_failure("a", "connect")
    assert state.is_healthy("a")
    clock.advance(4)
    state.record_failure("a", "http_503")
    assert not state.is_healthy("a")
    assert not state.is_usable("a")
    assert state.is_healthy("b")


def test_failures_spread_beyond_window_do_not_trip() -> None:
    state, clock = make()
    for _ in range(6):
        state.record_failure("a", "http_503")
        clock.advance(5.1)  # only two failures ever fall inside one 10 s window
    assert state.is_healthy("a")


def test_success_while_healthy_does_not_reset_the_window() -> None:
    state, _ = make()
    state.record_failure("a", "http_503")
    state.record_failure("a", "http_503")
    state.record_success("a")
    state.record_failure("a", "http_503")
    assert not state.is_healthy("a")


def test_statuses_outside_passive_list_do_not_count() -> None:
    state, _ = make()
    for _ in range(5):
        state.record_failure("a", "http_400")
    assert state.is_healthy("a")


def test_after_cooldown_exactly_one_probe_is_granted() -> None:
    state, clock = make()
    trip(state)
    clock.advance(4.9)
    assert not state.is_usable("a")
    clock.advance(0.1)
    assert state.snapshot()["a"] == "probing"
    assert state.is_usable("a")
    assert not state.is_usable("a")
    assert not state.is_usable("a")
    assert not state.is_healthy("a")


def test_probe_success_restores_health_and_clears_history() -> None:
    state, clock = make()
    trip(state)
    clock.advance(5)
    assert state.is_usable("a")
    state.record_success("a")
    assert state.is_healthy("a")
    assert state.is_usable("a")
    state.record_failure("a", "http_503")
    state.record_failure("a", "http_503")
    assert state.is_healthy("a")  # the failures before the trip were forgotten


def test_probe_failure_reopens_cooldown() -> None:
    state, clock = make()
    trip(state)
    clock.advance(5)
    assert state.is_usable("a")
    state.record_failure("a", "timeout")
    assert state.snapshot()["a"] == "unhealthy"
    clock.advance(4.9)
    assert not state.is_usable("a")
    clock.advance(0.1)
    assert state.is_usable("a")


def test_unrecorded_probe_lapses_after_one_cooldown() -> None:
    state, clock = make()
    trip(state)
    clock.advance(5)
    assert state.is_usable("a")
    clock.advance(4.9)
    assert not state.is_usable("a")
    clock.advance(0.1)
    assert state.is_usable("a")


def test_late_outcomes_while_open_do_not_move_the_cooldown() -> None:
    state, clock = make()
    trip(state)
    clock.advance(4)
    state.record_failure("a", "http_503")
    state.record_success("a")
    assert not state.is_healthy("a")
    clock.advance(1)
    assert state.is_usable("a")


def test_unusable_lists_the_down_subset() -> None:
    state, _ = make()
    trip(state, "a")
    assert state.unusable(NAMES) == {"a"}


def test_unusable_is_empty_when_every_name_is_down() -> None:
    state, _ = make()
    trip(state, "a")
    state.mark("b", False)
    assert state.unusable(NAMES) == set()


def test_active_mark_holds_without_expiry() -> None:
    state, clock = make()
    state.mark("a", False, source="active")
    clock.advance(3600)
    assert not state.is_usable("a")
    assert state.snapshot()["a"] == "unhealthy"
    state.mark("a", True, source="active")
    assert state.is_usable("a")


def test_active_and_passive_must_both_agree_on_healthy() -> None:
    state, clock = make()
    state.mark("a", False)
    trip(state)
    state.mark("a", True)
    assert not state.is_healthy("a")
    clock.advance(5)
    assert state.is_usable("a")
    state.record_success("a")
    assert state.is_healthy("a")


def test_passive_mark_opens_and_closes_the_breaker() -> None:
    state, clock = make()
    state.mark("a", False, source="passive")
    assert state.snapshot()["a"] == "unhealthy"
    clock.advance(5)
    assert state.snapshot()["a"] == "probing"
    state.mark("a", True, source="passive")
    assert state.snapshot()["a"] == "healthy"


def test_listener_hears_each_transition_once() -> None:
    events: list[tuple[str, bool]] = []
    state, clock = make(events)
    trip(state)
    state.record_failure("a", "http_503")  # already open: no new transition
    clock.advance(5)
    state.is_usable("a")
    state.record_failure("a", "timeout")  # probe failed: still unhealthy, no event
    clock.advance(5)
    state.is_usable("a")
    state.record_success("a")
    state.mark("b", False)
    state.mark("b", False)
    state.mark("b", True)
    assert events == [("a", False), ("a", True), ("b", False), ("b", True)]


def test_snapshot_reports_every_name() -> None:
    state, _ = make()
    trip(state, "b")
    assert state.snapshot() == {"a": "healthy", "b": "unhealthy"}


def test_defaults_apply_when_no_passive_settings() -> None:
    state = HealthState(["x"])
    for _ in range(PassiveChecks().failures):
        state.record_failure("x", "connect")
    assert not state.is_healthy("x")


def test_unusable_grants_no_probe_the_caller_claims_it() -> None:
    state, clock = make()
    trip(state)
    clock.advance(5)
    assert state.unusable(NAMES) == set()  # due a probe: a candidate again
    assert state.unusable(NAMES) == set()  # reading twice changes nothing
    state.claim("a")
    assert state.unusable(NAMES) == {"a"}  # the probe is out: others keep away
    state.record_success("a")
    assert state.is_healthy("a")


def test_claim_does_nothing_to_a_healthy_or_cooling_instance() -> None:
    state, clock = make()
    state.claim("a")
    assert state.snapshot()["a"] == "healthy"
    trip(state)
    state.claim("a")
    clock.advance(5)
    assert state.is_usable("a")  # the early claim granted nothing


def test_passive_settings_may_differ_per_instance() -> None:
    state = HealthState(NAMES, {"a": PassiveChecks(failures=1)})
    state.record_failure("a", "http_503")
    for _ in range(PassiveChecks().failures - 1):
        state.record_failure("b", "http_503")
    assert (state.is_healthy("a"), state.is_healthy("b")) == (False, True)
