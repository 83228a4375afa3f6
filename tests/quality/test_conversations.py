"""The conversation set's shape, and routing conversations on a tiny route by today's rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semproxy.config.loader import load_text
from semproxy.quality.conversations import (
    load_conversations,
    parse_conversation,
    rates,
    route_conversations,
)
from semproxy.quality.labelled import LabelledDataError
from semproxy.runtime.compile import router_for

DATA = Path(__file__).parent / "data/conversations"
DOMAINS = {"banking", "credit_cards", "kitchen_and_dining", "home", "auto_and_commute",
           "travel", "utility", "work"}


def user_turns(path: Path) -> tuple[set[str], set[str]]:
    """(CLINC prompts, follow-ups) used in a file."""
    prompts: set[str] = set()
    followups: set[str] = set()
    for line in path.read_text().splitlines():
        row = json.loads(line)
        users = [m["content"] for m in row["messages"] if m["role"] == "user"]
        for text, label in zip(users, row["user_labels"], strict=True):
            (followups if label is None else prompts).add(text)
    return prompts, followups


@pytest.mark.parametrize("name", ["tune", "test", "test2"])
def test_each_file_has_both_kinds_at_two_and_three_turns(name: str) -> None:
    convs = load_conversations(DATA / f"{name}.jsonl")
    assert len(convs) >= 600
    assert {(c.kind, c.turns) for c in convs} == {
        ("followup", 2), ("followup", 3), ("switch", 2), ("switch", 3)}
    assert {c.item.instance for c in convs} == DOMAINS
    for line in (DATA / f"{name}.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert row["label"] == row["instance"] == next(
            x for x in reversed(row["user_labels"]) if x is not None)


def test_tune_and_test_share_no_prompt_and_no_follow_up() -> None:
    tune_prompts, tune_followups = user_turns(DATA / "tune.jsonl")
    test_prompts, test_followups = user_turns(DATA / "test.jsonl")
    assert not tune_prompts & test_prompts
    assert not tune_followups & test_followups
    assert len(tune_followups) + len(test_followups) >= 60


def test_test2_shares_no_prompt_and_no_follow_up_with_the_other_files() -> None:
    test2_prompts, test2_followups = user_turns(DATA / "test2.jsonl")
    shipped = {line.strip() for line in (Path(__file__).parents[2] / "src/semproxy/semantic"
                                         / "followups.txt").read_text().splitlines()}
    for name in ("tune", "test"):
        prompts, followups = user_turns(DATA / f"{name}.jsonl")
        assert not test2_prompts & prompts and not test2_followups & followups
    assert not test2_followups & shipped and len(test2_followups) >= 60
    probe = {line for line in (DATA / "followups_probe_tune.txt").read_text().splitlines()
             if line and not line.startswith("#")}
    assert not probe & (shipped | test2_followups | user_turns(DATA / "test.jsonl")[1])


def test_a_line_without_its_conversation_fields_is_refused() -> None:
    line = json.dumps({"messages": [{"role": "user", "content": "hi"}], "instance": None})
    with pytest.raises(LabelledDataError, match="x:1: needs kind"):
        parse_conversation(line, "x:1")
    bad = json.dumps({"messages": [{"role": "user", "content": "hi"}], "instance": None,
                      "kind": "switch", "turns": 2, "user_labels": [None]})
    with pytest.raises(LabelledDataError, match="must match"):
        parse_conversation(bad, "x:2")


async def test_last_user_rule_keeps_switches_and_flags_turns_that_fail_alone(
        tmp_path: Path, config_text: str) -> None:
    def line(turns: list[tuple[str, str | None]], kind: str) -> str:
        messages: list[dict[str, str]] = []
        for text, _ in turns:
            if messages:
                messages.append({"role": "assistant", "content": "done"})
            messages.append({"role": "user", "content": text})
        label = next(lab for _, lab in reversed(turns) if lab is not None)
        return json.dumps({"messages": messages, "instance": label, "kind": kind,
                           "turns": len(turns), "user_labels": [lab for _, lab in turns]})

    data = tmp_path / "c.jsonl"
    data.write_text("\n".join([
        # A switch from cooking to weather: today's rule follows it.
        line([("a recipe for chocolate cake please", "cooking"),
              ("is it going to rain this weekend", "weather")], "switch"),
        # Mislabelled on purpose: a weather prompt said to be code fails alone.
        line([("what is the weather forecast for tomorrow", "code"),
              ("write a python function to reverse a string", "code")], "followup"),
    ]) + "\n")
    async with router_for(load_text(config_text), "r1") as router:
        results = await route_conversations(router, load_conversations(data))
    assert [(r.right, r.alone_ok) for r in results] == [(True, True), (True, False)]
    table = rates(results)
    assert (table[("switch", "2")].successes, table[("switch", "2")].n) == (1, 1)
    assert table[("followup", "all alone-ok")].n == 0
