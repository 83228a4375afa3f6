"""The decision log and the fan-out observer, driven by hand."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from semproxy.observability.decisions import DecisionLog
from semproxy.observability.fanout import FanoutObserver
from semproxy.observability.observer import SilentObserver
from semproxy.semantic.decision import Decision

MATCH = Decision(pick="code", reason="matched", cleared=("code",),
                 ranking=(("code", 0.91234), ("translate", 0.2)))


def test_a_semantic_request_is_logged_with_its_pick_score_and_latency() -> None:
    log = DecisionLog()
    log.on_semantic("auto", MATCH)
    log.on_response("auto", "code", 200, 0.0125, None, None)
    (entry,) = log.entries
    assert {k: entry[k] for k in ("seq", "route", "pick", "instance", "status", "reason",
                                  "top_score", "latency_ms")} == {
        "seq": 1, "route": "auto", "pick": "code", "instance": "code", "status": 200,
        "reason": "matched", "top_score": 0.9123, "latency_ms": 12.5}


def test_the_decision_does_not_leak_into_the_next_request() -> None:
    log = DecisionLog()
    log.on_semantic("auto", MATCH)
    log.on_response("auto", "code", 200, 0.01, None, None)
    log.on_response("plain", "a", 502, 0.01, None, None)
    assert (log.entries[1]["pick"], log.entries[1]["reason"]) == ("a", None)


def test_unmatched_requests_are_not_decisions() -> None:
    log = DecisionLog()
    log.on_response("-", "-", 404, 0.001, None, None)
    assert not log.entries


def test_the_ring_keeps_only_the_last_entries() -> None:
    log = DecisionLog(size=3)
    for _ in range(5):
        log.on_response("r", "a", 200, 0.0, None, None)
    assert [e["seq"] for e in log.entries] == [3, 4, 5]


async def test_a_listener_that_falls_behind_loses_entries_instead_of_blocking() -> None:
    log = DecisionLog()
    queue: asyncio.Queue[dict[str, object]] = log.listen()
    for _ in range(queue.maxsize + 5):
        log.on_response("r", "a", 200, 0.0, None, None)
    assert queue.qsize() == queue.maxsize
    log.unlisten(queue)
    log.on_response("r", "a", 200, 0.0, None, None)
    assert queue.qsize() == queue.maxsize


class RecordingObserver(SilentObserver):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_semantic(self, route: str, decision: Decision, prompt: str | None = None) -> None:
        self.calls.append(f"semantic {route} {decision.pick} {prompt}")

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Mapping[str, int] | None,
                    protocol: str = "chat") -> None:
        self.calls.append(f"response {route} {instance} {status} {protocol}")


def test_fanout_passes_every_call_to_each_observer_in_order() -> None:
    first, second = RecordingObserver(), RecordingObserver()
    fan = FanoutObserver(first, second)
    fan.on_semantic("auto", MATCH, "hi")
    fan.on_attempt("auto", "code", "ok", 0.1)
    fan.on_response("auto", "code", 200, 0.1, None, None, "messages")
    assert first.calls == second.calls == ["semantic auto code hi",
                                           "response auto code 200 messages"]


def test_a_prompt_is_kept_only_when_given_and_cut_to_a_few_hundred_characters() -> None:
    log = DecisionLog()
    log.on_semantic("auto", MATCH, "x" * 2000)
    log.on_response("auto", "code", 200, 0.01, None, None)
    log.on_semantic("auto", MATCH)
    log.on_response("auto", "code", 200, 0.01, None, None)
    assert log.entries[0]["prompt"] == "x" * 500
    assert "prompt" not in log.entries[1]
