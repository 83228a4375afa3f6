"""Build the multi-turn conversation sets from CLINC150 prompts and hand-written follow-ups.

    python scripts/gen_conversations.py \
        --train-val ../shared/data/clinc150_train_val.json \
        --full path/to/oos-eval/data/data_full.json

Writes tune.jsonl (CLINC train + val prompts, one half of the follow-ups and
answers) and test.jsonl (CLINC test prompts, the other half) into
tests/quality/data/conversations, so tuning never sees test material. With
--test2 it writes test2.jsonl instead, a second held-out file: CLINC test
prompts that test.jsonl does not use, follow-ups of their own
(followups_test2.txt) and the test half of the answers; --test3 likewise
writes test3.jsonl (prompts neither uses, followups_test3.txt). Seeded:
the same inputs and seed give byte-identical files. CLINC150: Larson et al.
2019, CC BY 3.0 (github.com/clinc/oos-eval, data/data_full.json).

Each line: {"messages": [...], "instance": d, "label": d, "kind": "followup" |
"switch", "turns": 2 | 3, "user_labels": [domain or null per user turn]}.
`instance` is what `semproxy eval` reads; `label` is the same domain.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests/quality/data/conversations"
# The eight task domains. small_talk and meta are left out: their prompts are
# themselves about the conversation ("repeat that", "yes", "thank you"), so a
# topic-free follow-up could rightly belong to them and the label would be moot.
DOMAINS = ("banking", "credit_cards", "kitchen_and_dining", "home", "auto_and_commute",
           "travel", "utility", "work")
# (pattern, turns, how many): P a CLINC prompt, F a follow-up, S a prompt of
# another domain. The label is the domain of the last P or S.
PATTERNS = (("PF", 200), ("PS", 200), ("PFF", 150), ("PFS", 150), ("PSF", 100))
# test2.jsonl: more three-turn follow-ups, so that at least 150 follow-up conversations
# of each length remain after dropping those whose prompts fail alone; 300 switches.
PATTERNS_TEST2 = (("PF", 200), ("PS", 150), ("PFF", 200), ("PFS", 150), ("PSF", 100))
# test3.jsonl: about 1,150 unused test prompts of the eight domains remain after test and
# test2, so no P S F; >= 150 follow-ups of each length after filtering, 260 switches.
PATTERNS_TEST3 = (("PF", 190), ("PS", 140), ("PFF", 200), ("PFS", 120))


def read_lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def halves(items: list[Any], rng: random.Random) -> tuple[list[Any], list[Any]]:
    shuffled = sorted(items)
    rng.shuffle(shuffled)
    middle = len(shuffled) // 2
    return shuffled[:middle], shuffled[middle:]


def answer_halves(path: Path, rng: random.Random) -> tuple[dict[str, list[str]], ...]:
    """Per domain ("*" = any), the answers of each half."""
    by_key: dict[str, list[str]] = {}
    for line in read_lines(path):
        key, text = line.split("\t", 1)
        by_key.setdefault(key, []).append(text)
    split = {key: halves(texts, rng) for key, texts in sorted(by_key.items())}
    return ({k: a for k, (a, _) in split.items()}, {k: b for k, (_, b) in split.items()})


def prompt_pools(train_val: dict[str, Any], full: dict[str, Any]
                 ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per domain, the tune prompts (train + val) and the test prompts (test, minus any
    text that also occurs in train or val)."""
    tune: dict[str, list[str]] = {d: [] for d in DOMAINS}
    for split in ("train", "val"):
        for text, _, domain in train_val["splits"][split]:
            if domain in tune:
                tune[domain].append(text)
    seen = {t for texts in tune.values() for t in texts}
    test: dict[str, list[str]] = {d: [] for d in DOMAINS}
    for text, intent in full["test"]:
        domain = train_val["intent_to_domain"][intent]
        if domain in test and text not in seen:
            test[domain].append(text)
    return tune, test


class ConversationBuilder:
    """Draws prompts without replacement and follow-ups/answers from one half."""

    def __init__(self, rng: random.Random, prompts: dict[str, list[str]],
                 followups: list[str], answers: dict[str, list[str]],
                 spare: dict[str, list[str]] | None = None) -> None:
        self.rng = rng
        self.prompts = {d: rng.sample(texts, len(texts)) for d, texts in prompts.items()}
        self.followups = followups
        self.answers = answers
        # Drawn from only when a domain's own pool runs out (test3: prompts test/test2 use).
        self.spare = {d: rng.sample(texts, len(texts)) for d, texts in (spare or {}).items()}
        self.spare_used = 0

    def prompt(self, domain: str) -> str:
        if self.prompts[domain] or domain not in self.spare:
            return self.prompts[domain].pop()
        self.spare_used += 1
        return self.spare[domain].pop()

    def answer(self, domain: str) -> str:
        return self.rng.choice(self.answers["*"] + self.answers.get(domain, []))

    def build(self, pattern: str, first: str) -> dict[str, Any]:
        domain = first
        labels: list[str | None] = []
        messages: list[dict[str, str]] = []
        used: set[str] = set()
        for step in pattern:
            if messages:  # the answer to the previous user turn, in that turn's domain
                messages.append({"role": "assistant", "content": self.answer(domain)})
            if step == "F":
                text = self.rng.choice([f for f in self.followups if f not in used])
                used.add(text)
                labels.append(None)
            else:
                if step == "S":
                    domain = self.rng.choice([d for d in DOMAINS if d != domain])
                text = self.prompt(domain)
                labels.append(domain)
            messages.append({"role": "user", "content": text})
        return {"messages": messages, "instance": domain, "label": domain,
                "kind": "switch" if pattern.endswith("S") else "followup",
                "turns": len(pattern), "user_labels": labels}


def conversations(builder: ConversationBuilder, rng: random.Random,
                  patterns: tuple[tuple[str, int], ...] = PATTERNS) -> list[dict[str, Any]]:
    rows = []
    for pattern, count in patterns:
        firsts = [DOMAINS[i % len(DOMAINS)] for i in range(count)]
        rng.shuffle(firsts)
        rows += [builder.build(pattern, first) for first in firsts]
    rng.shuffle(rows)
    return rows


def write(rows: list[dict[str, Any]], path: Path) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


def used_prompts(path: Path) -> set[str]:
    """The CLINC prompts (user turns with a label) of a conversation file."""
    used: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        users = [m["content"] for m in row["messages"] if m["role"] == "user"]
        used.update(t for t, label in zip(users, row["user_labels"], strict=True) if label)
    return used


# The later held-out files: the files whose prompts each must avoid, its patterns, and
# whether those prompts may still be drawn once a domain's unused ones run out.
HELD_OUT = {
    "test2": (("test",), PATTERNS_TEST2, False),
    "test3": (("test", "test2"), PATTERNS_TEST3, True),
}


def write_held_out(args: argparse.Namespace, name: str, test_pool: dict[str, list[str]],
                   answers: dict[str, list[str]]) -> None:
    """test2.jsonl or test3.jsonl: test prompts the earlier files do not use, and
    follow-ups of its own (followups_<name>.txt)."""
    after, patterns, reuse = HELD_OUT[name]
    used = set().union(*(used_prompts(args.out / f"{f}.jsonl") for f in after))
    pool = {d: [t for t in texts if t not in used] for d, texts in test_pool.items()}
    spare = {d: [t for t in texts if t in used] for d, texts in test_pool.items()} \
        if reuse else None
    rng = random.Random(f"{args.seed}-{name}")
    followups = read_lines(args.out / f"followups_{name}.txt")
    builder = ConversationBuilder(rng, pool, followups, answers, spare)
    rows = conversations(builder, rng, patterns)
    write(rows, args.out / f"{name}.jsonl")
    print(f"{name}.jsonl: {len(rows)} conversations, {len(followups)} follow-ups, "
          f"{builder.spare_used} prompts shared with {' and '.join(after)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-val", required=True, type=Path,
                        help="clinc150_train_val.json (train, val, intent_to_domain)")
    parser.add_argument("--full", required=True, type=Path,
                        help="CLINC150 data/data_full.json (its test split)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--test2", action="store_true",
                        help="write only test2.jsonl (a second held-out file)")
    parser.add_argument("--test3", action="store_true",
                        help="write only test3.jsonl (a third held-out file)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    followups = halves(read_lines(args.out / "followups.txt"), rng)
    answers = answer_halves(args.out / "answers.txt", rng)
    pools = prompt_pools(json.loads(args.train_val.read_text()),
                         json.loads(args.full.read_text()))
    if args.test2 or args.test3:
        write_held_out(args, "test2" if args.test2 else "test3", pools[1], answers[1])
        return
    for half, name in enumerate(("tune", "test")):
        file_rng = random.Random(f"{args.seed}-{name}")
        builder = ConversationBuilder(file_rng, pools[half], followups[half], answers[half])
        rows = conversations(builder, file_rng)
        write(rows, args.out / f"{name}.jsonl")
        print(f"{name}.jsonl: {len(rows)} conversations, {len(followups[half])} follow-ups")


if __name__ == "__main__":
    main()
