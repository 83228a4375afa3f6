"""scripts/gen_conversations.py on synthetic prompts: patterns, labels, answers, reproducibility."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from scripts import gen_conversations as gen

FOLLOWUPS = [f"follow-up {i}" for i in range(10)]
ANSWERS = {"*": ["generic answer"], **{d: [f"{d} answer"] for d in gen.DOMAINS}}


def pools() -> dict[str, list[str]]:
    return {d: [f"{d} prompt {i}" for i in range(200)] for d in gen.DOMAINS}


def build(seed: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return gen.conversations(gen.ConversationBuilder(rng, pools(), FOLLOWUPS, ANSWERS), rng)


def domain_of(text: str) -> str:
    return text.rsplit(" ", 2)[0]


def test_same_seed_same_conversations_and_each_prompt_used_once() -> None:
    rows = build("s")
    assert rows == build("s") and rows != build("t")
    assert len(rows) == sum(count for _, count in gen.PATTERNS)
    prompts = [m["content"] for r in rows for m in r["messages"]
               if m["role"] == "user" and "prompt" in m["content"]]
    assert len(prompts) == len(set(prompts))


def test_labels_follow_the_last_prompt_and_answers_the_turn_before() -> None:
    for row in build("s"):
        users = [m["content"] for m in row["messages"] if m["role"] == "user"]
        answers = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["user", "assistant"] * (row["turns"] - 1) + ["user"]
        assert row["user_labels"] == [None if u in FOLLOWUPS else domain_of(u) for u in users]
        last = [label for label in row["user_labels"] if label is not None][-1]
        assert row["instance"] == row["label"] == last
        assert row["kind"] == ("followup" if users[-1] in FOLLOWUPS else "switch")
        domains = [label for label in row["user_labels"] if label is not None]
        assert len(set(domains)) == len(domains)  # a switch always changes the domain
        # Each answer replies to the user turn before it, in that turn's domain.
        current = row["user_labels"][0]
        for label, answer in zip(row["user_labels"], answers, strict=False):
            current = label or current
            assert answer in ("generic answer", f"{current} answer")


def test_halves_are_disjoint_and_seeded() -> None:
    first, second = gen.halves(FOLLOWUPS, random.Random(1))
    assert sorted(first + second) == sorted(FOLLOWUPS) and not set(first) & set(second)
    assert (first, second) == gen.halves(list(reversed(FOLLOWUPS)), random.Random(1))


def test_a_domain_that_runs_out_draws_from_the_spare_pool_and_counts_it() -> None:
    rng = random.Random("s")
    own = {d: [f"{d} prompt {i}" for i in range(2)] for d in gen.DOMAINS}
    spare = {d: [f"{d} prompt {i}" for i in range(100, 110)] for d in gen.DOMAINS}
    builder = gen.ConversationBuilder(rng, own, FOLLOWUPS, ANSWERS, spare)
    drawn = [builder.prompt("travel") for _ in range(5)]
    assert sorted(drawn[:2]) == ["travel prompt 0", "travel prompt 1"]
    assert all(int(t.rsplit(" ", 1)[1]) >= 100 for t in drawn[2:]) and builder.spare_used == 3


DATA = Path(__file__).parent / "data/conversations"


def _lines(name: str) -> set[str]:
    return {line.strip().lower() for line in (DATA / name).read_text().splitlines()
            if line.strip() and not line.startswith("#")}


def test_the_third_held_out_file_shares_no_prompt_or_follow_up_with_the_others() -> None:
    ours = gen.used_prompts(DATA / "test3.jsonl")
    for other in ("tune.jsonl", "test.jsonl", "test2.jsonl"):
        assert not ours & gen.used_prompts(DATA / other), other
    written = _lines("followups_test3.txt")
    shipped = Path(__file__).parents[2] / "src/semproxy/semantic/followups.txt"
    others = (_lines("followups.txt") | _lines("followups_test2.txt")
              | _lines("followups_probe_tune.txt")
              | {t.strip().lower() for t in shipped.read_text().splitlines() if t.strip()})
    assert len(written) >= 80 and not written & others
