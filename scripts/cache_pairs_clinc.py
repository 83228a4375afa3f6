"""The CLINC150 sections of the response-cache evaluation pairs (gen_cache_pairs.py).

Each section takes CLINC prompts by intent and a seeded `random.Random` and returns
pairs `{"a", "b", "same", "category", "kind", "source", "group"}`: paraphrases of one
slot-free intent, and hard negatives made by substituting a value, negating, pairing
prompts of one intent with other slot values or of two intents of one domain. Why
each rule is what it is: tests/quality/data/cache/README.md. CLINC150: Larson et al.
2019, CC BY 3.0.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SEED = 26
# A how-to question and the request it is about deserve different answers ("how do
# i reset to factory settings" / "reset to factory settings"), as do a question and
# the value it asks for ("where can i check my credit score" / "what's my credit
# score"): the patterns below drop the prompts of the other kind.
HOW_TO = r"\b(how (do|can|would|should) i|how to|how exactly|what do i do|where (can|do) i" \
    r"|process|websites?|help me get|tell me how|videos?)\b"
# Intents whose prompts all ask one slot-free question, so any two of them deserve the
# same answer (read through by hand; the pattern drops the prompts that carry a slot
# or ask something else). flip_coin was dropped after reading: a coin flip's answer is
# random and the prompts call different sides ("i call tails" / "you win with heads").
PARAPHRASE_INTENTS: dict[str, str | None] = {
    "who_made_you": r"\binventor of ai\b", "meaning_of_life": None,
    "who_do_you_work_for": r"\bmy worker\b",
    "do_you_have_pets": r"\b(cat|dog|live with|like)\b", "what_are_your_hobbies": None,
    "what_is_your_name": None, "where_are_you_from": r"\b(state|family|when)\b",
    "are_you_a_bot": None, "how_old_are_you": None, "what_can_i_ask_you": None,
    "credit_score": HOW_TO + r"|\b(good enough|locate|find out|who)\b",
    "improve_credit_score": r"\b(decrease|lower|hurt|new account|open|will|videos?)\b",
    "repeat": r"\bquestion\b",
    "current_location": HOW_TO + r"|\benter into\b", "find_phone": r"\biphone|siri\b",
    "thank_you": None, "greeting": r"\bfeel like doing\b",
    "goodbye": r"\bsee you again|to see you\b", "reset_settings": HOW_TO,
    "tell_joke": r"\b(about|on|regarding|involving|with|doctor|dad|knock|lawyer|dirty"
                 r"|animals?|chicken|blonde|math|programming|puns?|dogs?|cats?|kids?|mama|political)\b",
    "pto_balance": None,
    # Who sings it and what it is called are two questions.
    "what_song": r"\b(who|singer|sings?|sang|sung|artist|band|by)\b",
    # Asking what the next song is does not ask to play it.
    "next_song": r"\b(last|previous|back)\b|^(what|which)\b|\bfind the next\b",
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


@functools.cache
def _pool_patterns() -> list[tuple[str, str, re.Pattern[str]]]:
    return [(category, value, re.compile(rf"\b{re.escape(value)}\b"))
            for category, pool in POOLS.items() for value in pool]


@functools.cache
def entities(text: str) -> list[tuple[str, str, int, int]]:
    """(category, value, start, end) of every pool word or number in `text`."""
    found: list[tuple[str, str, int, int]] = []
    for category, value, pattern in _pool_patterns():
        if value not in text:
            continue  # most prompts name no pool word: skip the regular expression
        for m in pattern.finditer(text):
            if category != "language" or re.search(LANGUAGE_CONTEXT, text[:m.start()]):
                found.append((category, value, m.start(), m.end()))
    for m in re.finditer(r"\b\d+(?:\.\d+)?\b", text):
        found.append(("number", m.group(), m.start(), m.end()))
    for m in re.finditer(rf"\b({'|'.join(NUMBER_WORDS)})\b", text):
        found.append(("number", m.group(), m.start(), m.end()))
    return found


def paraphrases(clinc: dict[str, list[str]], rng: random.Random,
                intents: dict[str, str | None] = PARAPHRASE_INTENTS,
                per_intent: int = PAIRS_PER_INTENT) -> list[dict[str, Any]]:
    """Up to `per_intent` pairs of different wording from each of `intents`."""
    out = []
    for intent, pattern in intents.items():
        kept = [t for t in clinc[intent] if not entities(t)
                and not (pattern and re.search(pattern, t))]
        pairs = [(a, b) for a, b in itertools.combinations(sorted(kept), 2)
                 if words(a) != words(b)]
        for a, b in rng.sample(pairs, min(per_intent, len(pairs))):
            out.append(pair(a, b, True, "clinc_intent", "clinc", intent, "crowd"))
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


def substitutions(clinc: dict[str, list[str]], rng: random.Random,
                  caps: dict[str, int] = CAPS) -> list[dict[str, Any]]:
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
            found[category_label].append(pair(text, changed, False, category_label, "clinc",
                                              intent))
    out = []
    for category, pairs in sorted(found.items()):
        out += rng.sample(pairs, min(caps[category], len(pairs)))
    return out


def other_slots(clinc: dict[str, list[str]], rng: random.Random, total: int = 240
                ) -> list[dict[str, Any]]:
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
            out.append(pair(a, b, False, "other_slot", "clinc", intent))
    return rng.sample(out, min(total, len(out)))


def negations(clinc: dict[str, list[str]], rng: random.Random, total: int = 220
              ) -> list[dict[str, Any]]:
    out = []
    for intent in sorted(clinc):
        made = []
        for text in clinc[intent]:
            for pattern, replacement in NEGATION_RULES:
                if re.search(pattern, text):
                    made.append(pair(text, re.sub(pattern, replacement, text, count=1), False,
                                     "negation", "clinc", intent))
                    break
        out += rng.sample(made, min(4, len(made)))
    return rng.sample(out, min(total, len(out)))


def other_intents(clinc: dict[str, list[str]], domains: dict[str, str], rng: random.Random,
                  keep: Callable[[str, str], bool] = lambda a, b: True, total: int = 200
                  ) -> list[dict[str, Any]]:
    """Prompts of two intents of one domain that share most of their words (of the
    intent pairs `keep` accepts)."""
    by_domain: dict[str, list[tuple[str, str, frozenset[str]]]] = defaultdict(list)
    for intent in sorted(clinc):
        for text in clinc[intent]:
            by_domain[domains[intent]].append((intent, text, frozenset(words(text))))
    out = []
    for domain in sorted(by_domain):
        items = by_domain[domain]
        close: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        for i, j in _overlapping(items):
            (ia, a, _), (ib, b, _) = items[i], items[j]
            if ia != ib and keep(ia, ib):
                close[(min(ia, ib), max(ia, ib))].append((a, b))
        for key in sorted(close):
            for a, b in rng.sample(close[key], min(4, len(close[key]))):
                out.append(pair(a, b, False, "other_intent", "clinc", "+".join(key)))
    return rng.sample(out, min(total, len(out)))


def _overlapping(items: list[tuple[str, str, frozenset[str]]]) -> list[tuple[int, int]]:
    """Index pairs i < j (in the order of itertools.combinations) whose word sets have a
    Jaccard overlap of at least 0.6, counted with one matrix product."""
    vocabulary = {w: k for k, w in enumerate(sorted({w for _, _, ws in items for w in ws}))}
    member = np.zeros((len(items), len(vocabulary)), dtype=np.float32)
    for row, (_, _, ws) in enumerate(items):
        member[row, [vocabulary[w] for w in ws]] = 1.0
    shared = (member @ member.T).astype(np.int64)
    sizes = member.sum(axis=1).astype(np.int64)
    union = sizes[:, None] + sizes[None, :] - shared
    found = np.triu(shared / np.maximum(union, 1) >= 0.6, k=1)
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(found), strict=True)]


def pair(a: str, b: str, same: bool, category: str, source: str, group: str,
         kind: str = "negative") -> dict[str, Any]:
    """One line of the set. `kind` is crowd, chat or edit for a paraphrase."""
    return {"a": a, "b": b, "same": same, "category": category, "kind": kind,
            "source": source, "group": group}
