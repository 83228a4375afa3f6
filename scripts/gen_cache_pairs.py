"""Build the response-cache evaluation pairs from CLINC150 and hand-written material.

    python scripts/gen_cache_pairs.py --train-val ../shared/data/clinc150_train_val.json

Writes tests/quality/data/cache/tune.jsonl and test.jsonl: pairs of prompts that
deserve the same answer (`same: true`, paraphrases) and hard negatives (`same:
false`: same topic and wording, another answer). Each line: {"a", "b", "same",
"category", "source": "clinc" | "hand", "group"}. The split is by group (a CLINC
intent, a hand-written block), so no intent or block has pairs in both halves.
Seeded: the same inputs give byte-identical files. How the pairs are made and why
is in tests/quality/data/cache/README.md. CLINC150: Larson et al. 2019, CC BY 3.0.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests/quality/data/cache"
SEED = 26
# Intents whose prompts all ask one slot-free question, so any two of them deserve the
# same answer (read through by hand; the pattern drops the prompts that carry a slot
# or ask something else).
PARAPHRASE_INTENTS: dict[str, str | None] = {
    "who_made_you": None, "meaning_of_life": None, "who_do_you_work_for": r"\bmy worker\b",
    "do_you_have_pets": r"\b(cat|dog|live with|like)\b", "what_are_your_hobbies": None,
    "what_is_your_name": None, "where_are_you_from": r"\b(state|family)\b",
    "are_you_a_bot": None, "how_old_are_you": None, "what_can_i_ask_you": None,
    "flip_coin": r"\b(dime|quarter|penny|nickel)\b", "credit_score": None,
    "improve_credit_score": r"\b(decrease|lower|hurt|new account|open)", "repeat": r"\bquestion\b",
    "current_location": None, "find_phone": r"\biphone|siri\b", "thank_you": None,
    "greeting": None, "goodbye": None, "reset_settings": None,
    "tell_joke": r"\b(about|on|regarding|involving|with)\b", "pto_balance": None,
    "what_song": None, "next_song": r"\b(last|previous|back)\b",
}
PAIRS_PER_INTENT = 48
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["january", "february", "march", "april", "june", "july", "august", "september",
          "october", "november", "december"]
RELATIVE_DAYS = ["today", "tomorrow", "yesterday", "tonight"]
# Replacement pools for hard negatives (written for this script; the near-miss module
# keeps its own lists, so the set does not test the guard against its own words).
POOLS: dict[str, list[str]] = {
    "place": ["boston", "chicago", "dallas", "denver", "seattle", "miami", "atlanta",
              "phoenix", "houston", "austin", "portland", "detroit", "tampa", "orlando",
              "san diego", "las vegas", "new york", "los angeles", "san francisco", "london",
              "paris", "tokyo", "berlin", "rome", "madrid", "toronto", "sydney", "dubai",
              "tucson", "boise", "fresno", "omaha", "tulsa", "reno", "spokane", "el paso",
              "france", "germany", "italy", "spain", "japan", "china", "india", "mexico",
              "canada", "brazil", "australia", "egypt", "peru", "kenya", "norway", "greece"],
    "language": ["spanish", "french", "german", "italian", "japanese", "chinese", "russian",
                 "portuguese", "korean", "arabic", "hindi", "dutch", "swedish", "polish"],
    "amount": ["dollars", "euros", "pesos", "yen", "pounds", "rupees", "francs", "yuan"],
    "name": ["john", "mary", "steve", "sarah", "mike", "linda", "david", "emma", "carlos",
             "priya", "ahmed", "olga", "kevin", "rachel", "tom", "lisa", "jake", "nina",
             "bob", "alice", "jessica", "mark", "anna", "peter", "laura", "chris"],
    "date": [*WEEKDAYS, *MONTHS, *RELATIVE_DAYS],
    "object": ["apple", "banana", "rice", "pasta", "chicken", "salmon", "steak", "broccoli",
               "eggs", "avocado", "pizza", "lasagna", "bread", "tofu", "quinoa", "cheese",
               "potatoes", "carrots", "beef", "pork", "shrimp", "oatmeal", "spinach", "tacos",
               "cake", "cookies", "soup", "burger", "lamb"],
}
# Not "one" (a pronoun as often as a number) nor "hundred" (part of a larger number).
NUMBER_WORDS = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "twelve", "fifteen", "twenty", "thirty", "fifty"]
# Where a language names a language (not a cuisine: "french fries", "chinese food").
LANGUAGE_CONTEXT = r"\b(in|into|to|from|speak|speaks|learn)\s+$"
CAPS = {"number": 260, "date": 200, "place": 220, "name": 90, "language": 110, "amount": 80,
        "object": 170}
PER_INTENT = 12  # substitution negatives per intent and category, so a few intents do not rule
NEGATION_RULES = [
    (r"^i want to ", "i don't want to "), (r"^i need to ", "i don't need to "),
    (r"^i would like to ", "i would not like to "), (r"^i'd like to ", "i'd rather not "),
    (r"^please ", "please don't "),
    (r"^(turn|set|book|cancel|add|remove|play|send|call|text|order|make|schedule|change|reset"
     r"|transfer|pay|freeze|share|put|delete|update|lock|unlock|sync|start|stop) ", r"don't \1 "),
]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def load_clinc(path: Path) -> dict[str, list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    by_intent: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    for text, intent, _domain in data["splits"]["train"] + data["splits"]["val"]:
        if text not in seen:
            seen.add(text)
            by_intent[intent].append(text)
    return dict(by_intent)


def entities(text: str) -> list[tuple[str, str, int, int]]:
    """(category, value, start, end) of every pool word or number in `text`."""
    found: list[tuple[str, str, int, int]] = []
    for category, pool in POOLS.items():
        for value in pool:
            for m in re.finditer(rf"\b{re.escape(value)}\b", text):
                if category != "language" or re.search(LANGUAGE_CONTEXT, text[:m.start()]):
                    found.append((category, value, m.start(), m.end()))
    for m in re.finditer(r"\b\d+(?:\.\d+)?\b", text):
        found.append(("number", m.group(), m.start(), m.end()))
    for m in re.finditer(rf"\b({'|'.join(NUMBER_WORDS)})\b", text):
        found.append(("number", m.group(), m.start(), m.end()))
    return found


def paraphrases(clinc: dict[str, list[str]], rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for intent, pattern in PARAPHRASE_INTENTS.items():
        kept = [t for t in clinc[intent] if not entities(t)
                and not (pattern and re.search(pattern, t))]
        pairs = [(a, b) for a, b in itertools.combinations(sorted(kept), 2)
                 if words(a) != words(b)]
        for a, b in rng.sample(pairs, min(PAIRS_PER_INTENT, len(pairs))):
            out.append(_pair(a, b, True, "clinc_intent", "clinc", intent))
    return out


def _other(value: str, category: str, rng: random.Random) -> str:
    if category == "number":
        if value.isdigit() or re.fullmatch(r"\d+\.\d+", value):
            number = float(value)
            new = rng.choice([number + 1, number * 2, number + 10, max(number - 1, 0) or 3])
            return str(int(new)) if new == int(new) else f"{new:g}"
        return rng.choice([w for w in NUMBER_WORDS if w != value])
    pool = POOLS[category]
    if category == "date":  # a weekday for a weekday, a month for a month
        pool = next(g for g in (WEEKDAYS, MONTHS, RELATIVE_DAYS) if value in g)
    return rng.choice([v for v in pool if v != value])


def _articles(text: str) -> str:
    text = re.sub(r"\ba (?=[aeiou])", "an ", text)
    return re.sub(r"\ban (?=[^aeiou\s])", "a ", text)


def substitutions(clinc: dict[str, list[str]], rng: random.Random) -> list[dict[str, Any]]:
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for intent in sorted(clinc):
        per: dict[str, int] = defaultdict(int)
        for text in clinc[intent]:
            spans = entities(text)
            if not spans:
                continue
            category, value, start, end = rng.choice(sorted(spans))
            if category == "number" and re.search(r"\b(dollars?|euros?|\$)", text):
                category_label = "amount"
            else:
                category_label = category
            if per[category_label] >= PER_INTENT:
                continue
            per[category_label] += 1
            changed = _articles(text[:start] + _other(value, category, rng) + text[end:])
            found[category_label].append(_pair(text, changed, False, category_label, "clinc",
                                               intent))
    out = []
    for category, pairs in sorted(found.items()):
        out += rng.sample(pairs, min(CAPS[category], len(pairs)))
    return out


def other_slots(clinc: dict[str, list[str]], rng: random.Random) -> list[dict[str, Any]]:
    """Two prompts of one intent naming different places, dates, names...: another answer."""
    out = []
    for intent in sorted(clinc):
        tagged = []
        for text in clinc[intent]:
            spans = entities(text)
            if spans:
                tagged.append((text, {(c, v) for c, v, _, _ in spans}))
        pairs = [(a, b) for (a, ea), (b, eb) in itertools.combinations(tagged, 2)
                 if {c for c, _ in ea} == {c for c, _ in eb} and not ea & eb]
        for a, b in rng.sample(pairs, min(6, len(pairs))):
            out.append(_pair(a, b, False, "other_slot", "clinc", intent))
    return rng.sample(out, min(240, len(out)))


def negations(clinc: dict[str, list[str]], rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for intent in sorted(clinc):
        made = []
        for text in clinc[intent]:
            for pattern, replacement in NEGATION_RULES:
                if re.search(pattern, text):
                    made.append(_pair(text, re.sub(pattern, replacement, text, count=1), False,
                                      "negation", "clinc", intent))
                    break
        out += rng.sample(made, min(4, len(made)))
    return rng.sample(out, min(220, len(out)))


def other_intents(clinc: dict[str, list[str]], domains: dict[str, str],
                  rng: random.Random) -> list[dict[str, Any]]:
    """Prompts of two intents of one domain that share most of their words."""
    by_domain: dict[str, list[tuple[str, str, frozenset[str]]]] = defaultdict(list)
    for intent in sorted(clinc):
        for text in clinc[intent]:
            by_domain[domains[intent]].append((intent, text, frozenset(words(text))))
    out = []
    for domain in sorted(by_domain):
        items = by_domain[domain]
        close: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        for (ia, a, wa), (ib, b, wb) in itertools.combinations(items, 2):
            if ia != ib and len(wa & wb) / len(wa | wb) >= 0.6:
                close[(min(ia, ib), max(ia, ib))].append((a, b))
        for key in sorted(close):
            for a, b in rng.sample(close[key], min(4, len(close[key]))):
                out.append(_pair(a, b, False, "other_intent", "clinc", "+".join(key)))
    return rng.sample(out, min(200, len(out)))


def hand(directory: Path) -> list[dict[str, Any]]:
    out = []
    blocks = (directory / "paraphrases.txt").read_text(encoding="utf-8").split("\n\n")
    for i, block in enumerate(blocks):
        lines = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
        for a, b in itertools.combinations(lines, 2):
            out.append(_pair(a, b, True, "hand", "hand", f"p{i:03d}"))
    for i, line in enumerate((directory / "negatives.txt").read_text(encoding="utf-8")
                             .splitlines()):
        if line.strip() and not line.startswith("#"):
            category, a, b = (part.strip() for part in line.split("|"))
            out.append(_pair(a, b, False, category, "hand", f"n{i:03d}"))
    return out


def _pair(a: str, b: str, same: bool, category: str, source: str, group: str
          ) -> dict[str, Any]:
    return {"a": a, "b": b, "same": same, "category": category, "source": source,
            "group": group}


def split(pairs: list[dict[str, Any]], intents: list[str], rng: random.Random
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Half the CLINC intents and half the hand-written groups are for tuning."""
    shuffled = sorted(intents)
    rng.shuffle(shuffled)
    tune_intents = set(shuffled[: len(shuffled) // 2])
    hand_groups = sorted({p["group"] for p in pairs if p["source"] == "hand"})
    rng.shuffle(hand_groups)
    tune_hand = set(hand_groups[: len(hand_groups) // 2])
    tune, test = [], []
    for pair in pairs:
        if pair["source"] == "hand":
            (tune if pair["group"] in tune_hand else test).append(pair)
            continue
        sides = {i in tune_intents for i in pair["group"].split("+")}
        if len(sides) == 2:
            continue  # two intents on both sides of the split: in neither half
        (tune if sides == {True} else test).append(pair)
    return tune, test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-val", type=Path, required=True)
    args = parser.parse_args()
    rng = random.Random(SEED)
    clinc = load_clinc(args.train_val)
    domains = json.loads(args.train_val.read_text(encoding="utf-8"))["intent_to_domain"]
    pairs = (paraphrases(clinc, rng) + substitutions(clinc, rng) + other_slots(clinc, rng)
             + negations(clinc, rng) + other_intents(clinc, domains, rng) + hand(OUT))
    tune, test = split(pairs, list(clinc), rng)
    for name, rows in (("tune", tune), ("test", test)):
        with (OUT / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
        same = sum(r["same"] for r in rows)
        print(f"{name}: {same} paraphrases, {len(rows) - same} hard negatives")


if __name__ == "__main__":
    main()
