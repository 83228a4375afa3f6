"""Edit paraphrases: one prompt and the same prompt as a user might type it again.

What a cache sees most is not a crowd rewording but the same question asked again
with small differences: another casing or punctuation, a greeting or a "please"
around it, a typo, a contraction. `edit_pairs` makes such pairs from base prompts:
each gets one kind of edit (or, for a third of them, two kinds), and the category
says which (`edit_case`, `edit_filler`, `edit_typo`, `edit_contraction`,
`edit_mixed`).

There are two pools of fillers, casings and contractions: `A` for tune and test, `B`
for test2, written apart so that a rule fitted on tune does not meet its own words
again on test2 (B also has the forms A lacks: whole prompts in capitals, dropped
apostrophes, "gonna"). Neither pool was taken from semproxy's own word lists.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from scripts.cache_pairs_clinc import pair


@dataclass(frozen=True)
class EditPool:
    prefixes: tuple[str, ...]
    suffixes: tuple[str, ...]
    cases: tuple[str, ...]
    contractions: tuple[tuple[str, str], ...]


A = EditPool(
    prefixes=("hey ", "hi, ", "please ", "quick question: ", "can you tell me ", "so ",
              "ok, ", "hello, "),
    suffixes=(" please", " thanks", " thank you", "?", "!"),
    cases=("sentence", "question", "capital_i"),
    contractions=(("what is", "what's"), ("do not", "don't"), ("i am", "i'm"),
                  ("it is", "it's"), ("can not", "can't"), ("cannot", "can't"),
                  ("i would", "i'd"), ("you are", "you're"), ("is not", "isn't"),
                  ("does not", "doesn't"), ("i have", "i've"), ("where is", "where's")),
)
B = EditPool(
    prefixes=("hey there, ", "excuse me, ", "um, ", "yo ", "question: ", "i was wondering, ",
              "could you tell me ", "good morning! "),
    suffixes=(" pls", " thx", " cheers", " if you can", " ty", " :)"),
    cases=("title", "ellipsis", "upper"),
    contractions=(("what's", "whats"), ("don't", "dont"), ("i'm", "im"), ("can't", "cant"),
                  ("you're", "youre"), ("doesn't", "doesnt"), ("going to", "gonna"),
                  ("want to", "wanna"), ("how is", "how's"), ("who is", "who's"),
                  ("that is", "that's"), ("i will", "i'll")),
)
KINDS = ("case", "filler", "typo", "contraction")
_KEYBOARD = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]


def edit_pairs(bases: list[tuple[str, str, str]], pool: EditPool, rng: random.Random
               ) -> list[dict[str, Any]]:
    """An edit pair for each `(text, source, group)` base whose edit changes it."""
    out = []
    for text, source, group in bases:
        possible = [k for k in KINDS if k != "contraction" or _contractions(text, pool)]
        kinds = rng.sample(possible, 2 if rng.random() < 1 / 3 else 1)
        edited = text
        for kind in kinds:
            edited = _edit(edited, kind, pool, rng)
        if edited == text:
            continue
        category = f"edit_{kinds[0]}" if len(kinds) == 1 else "edit_mixed"
        a, b = (text, edited) if rng.random() < 0.5 else (edited, text)
        out.append(pair(a, b, True, category, source, group, "edit"))
    return out


def _edit(text: str, kind: str, pool: EditPool, rng: random.Random) -> str:
    if kind == "case":
        return _case(text, rng.choice(pool.cases))
    if kind == "filler":
        if rng.random() < 0.5:
            return rng.choice(pool.prefixes) + text
        return text.rstrip("?!.") + rng.choice(pool.suffixes)
    if kind == "typo":
        return typo(text, rng)
    found = _contractions(text, pool)
    if not found:
        return text  # an earlier edit took the words away; the other edit stands
    old, new = rng.choice(found)
    return re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", new, text, count=1)


def _contractions(text: str, pool: EditPool) -> list[tuple[str, str]]:
    """The (old, new) replacements `pool` can make in `text`; pool A also expands
    what the prompt contracted."""
    pairs = list(pool.contractions)
    if pool is A:
        pairs += [(b, a) for a, b in pool.contractions]
    return sorted((old, new) for old, new in pairs
                  if re.search(rf"(?<!\w){re.escape(old)}(?!\w)", text))


def _case(text: str, how: str) -> str:
    if how == "sentence":
        return text[:1].upper() + text[1:].rstrip(".?!") + "."
    if how == "question":
        return text.rstrip(".?!") + "?"
    if how == "capital_i":
        return re.sub(r"\bi\b", "I", text[:1].upper() + text[1:])
    if how == "title":
        return " ".join(w[:1].upper() + w[1:] for w in text.split())
    if how == "ellipsis":
        return text.rstrip(".?!") + "..."
    return text.upper()


def typo(text: str, rng: random.Random) -> str:
    """One slip of the fingers in a word of four letters or more, never its first
    letter: two letters swapped, one dropped, doubled or hit beside on the keyboard."""
    spans = [m for m in re.finditer(r"[a-z]{4,}", text)]
    if not spans:
        return text
    m = rng.choice(spans)
    word = m.group()
    i = rng.randrange(1, len(word) - 1)
    how = rng.choice(("swap", "drop", "double", "near"))
    if how == "swap" and word[i] != word[i + 1]:
        new = word[:i] + word[i + 1] + word[i] + word[i + 2:]
    elif how == "drop":
        new = word[:i] + word[i + 1:]
    elif how == "double":
        new = word[:i] + word[i] + word[i:]
    else:
        new = word[:i] + _near(word[i], rng) + word[i + 1:]
    return text[:m.start()] + new + text[m.end():]


def _near(letter: str, rng: random.Random) -> str:
    for row in _KEYBOARD:
        j = row.find(letter)
        if j >= 0:
            return rng.choice([row[k] for k in (j - 1, j + 1) if 0 <= k < len(row)])
    return letter
