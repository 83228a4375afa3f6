"""How two wordings of a prompt differ, once what does not change the question is set aside.

A user who asks again rarely types the same bytes: "hey, whats my credit scroe?"
is "what's my credit score". Before the two prompts are compared word by word,
the differences that never change what is asked are taken out:

- courtesy and greetings (`COURTESY`: please, thanks, hi, ok, sorry, ...; an
  opening such as "good morning" or "i was wondering");
- inflection ("stop" / "stops", "change" / "changed"): the same stem;
- typos: two words one keystroke apart (a letter dropped, added, replaced, two
  swapped), of four letters or more on the longer side, starting with the same
  letter (people rarely mistype the first one), unless both are English words
  ("dessert" / "desert", "boil" / "broil": `words.txt`) or both names
  (`names.txt`). `respell` writes them as the other prompt does, before the
  near-miss rules read the two.

What is left is a `Difference`: the content words only one side has (`only_a`,
`only_b`), the question and tense words that differ (`questions`: "when did" /
"when should"), and how much of the two word sequences lines up (`overlap`,
difflib's ratio: 1.0 for the same words in the same order). Pure and small: a
few microseconds for a chat prompt (docs/en/cache.md).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from semproxy.cache.wording import Wording, word_list

# Words that make a request polite or start a chat turn, never the question itself.
_COURTESY = """
please pls plz kindly thanks thank thx ty cheers hi hey hello hiya yo ok okay alright so um
uh well oh sorry quick question just actually really basically now again
"""
COURTESY = frozenset(_COURTESY.split())
_COURTESY_BY_LETTER: dict[str, tuple[str, ...]] = {
    first: tuple(sorted(w for w in COURTESY if w[0] == first))
    for first in {w[0] for w in COURTESY}}
# Openings that only start a chat turn ("good morning! what is ...").
OPENINGS = (("good", "morning"), ("good", "afternoon"), ("good", "evening"), ("excuse", "me"),
            ("i", "was", "wondering"), ("i", "wonder"))
# Light words: articles, pronouns, auxiliaries and the verbs that ask for an answer
# rather than name its subject ("tell", "explain", "calculate"). Differences in them
# alone are wording ("what is" / "tell me"); they still count in `overlap`.
_LIGHT = """
a an the and or but if then of to in on at by for with from into about as is are am be been
being do does doing have has having i me my mine you your yours we our us they them their
he him his she her it its this that these those there here what which whom whose
tell show give let know want need like get find any some all also too very much many
can could would may might one kind sort type way thing things using use via
calculate compute explain define describe recommend suggest
"""
LIGHT = frozenset(_LIGHT.split())
# Words that decide which question is asked: "when did" / "when should", "how" / "why".
_QUESTION = "when where why how who did was were had will should must"
QUESTION = frozenset(_QUESTION.split())


@dataclass(frozen=True, slots=True)
class Difference:
    """What differs between two prompts beyond courtesy, inflection and typos."""

    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    questions: tuple[str, ...]
    overlap: float
    typos: int

    @property
    def same_words(self) -> bool:
        """Nothing but courtesy, light words, inflection and typos differs."""
        return not (self.only_a or self.only_b or self.questions)


def prepare(a: Wording, b: Wording) -> tuple[Wording, Wording, int]:
    """`a` and `b` as the near-miss rules read them: without an opening that only
    starts a chat turn ("good morning" names no time), each respelled after the
    other (`respell`), and how many words were."""
    a, b = _without_opening(a), _without_opening(b)
    b, typos_b = respell(a, b)
    a, typos_a = respell(b, a)
    return a, b, typos_a + typos_b


def respell(a: Wording, b: Wording) -> tuple[Wording, int]:
    """`b` with each word that reads as a typo of a word of `a` (or of a courtesy
    word) spelled as in `a` (in `marked` too), and how many words were respelled. Run
    before the near-miss rules, so that "itlay" names what "italy" names."""
    theirs = set(a.words)
    fixed: dict[str, str] = {}
    for y in dict.fromkeys(b.words):
        if y in theirs or len(y) < 3 or not y.isalpha():
            continue
        near = [x for x in theirs if x[:1] == y[0] and abs(len(x) - len(y)) <= 1]
        for x in (*near, *_COURTESY_BY_LETTER.get(y[0], ())):
            if x not in fixed.values() and is_typo(x, y):
                fixed[y] = x
                break
    if not fixed:
        return b, 0
    words = tuple(fixed.get(w, w) for w in b.words)
    marked = frozenset(fixed.get(w, w) for w in b.marked)
    return Wording(words, b.numbers, b.quoted, marked), len(fixed)


def differ(a: Wording, b: Wording, typos: int = 0) -> Difference:
    """The difference between `a` and `b` (`b` respelled already; `typos` says how
    many of its words were)."""
    wa = [w for w in a.words if w not in COURTESY]
    wb = [w for w in b.words if w not in COURTESY]
    ka, kb = [_stem(w) for w in wa], [_stem(w) for w in wb]
    overlap = difflib.SequenceMatcher(None, ka, kb, autojunk=False).ratio() if ka or kb \
        else 1.0
    sa, sb = set(ka), set(kb)
    only_a = tuple(w for w, k in zip(wa, ka, strict=True) if k not in sb and w not in LIGHT
                   and w not in QUESTION)
    only_b = tuple(w for w, k in zip(wb, kb, strict=True) if k not in sa and w not in LIGHT
                   and w not in QUESTION)
    questions = tuple(sorted((set(wa) ^ set(wb)) & QUESTION))
    return Difference(only_a, only_b, questions, overlap, typos)


def _without_opening(w: Wording) -> Wording:
    for opening in OPENINGS:
        if w.words[:len(opening)] == opening:
            return Wording(w.words[len(opening):], w.numbers, w.quoted, w.marked)
    return w


def is_typo(x: str, y: str) -> bool:
    """`x` and `y` read as one word mistyped (see the module docstring)."""
    if x[:1] != y[:1] or max(len(x), len(y)) < 4 or not (x.isalpha() and y.isalpha()):
        return False
    if not one_keystroke(x, y):
        return False
    for known in (word_list("words.txt"), word_list("names.txt")):
        if x in known and y in known:
            return False  # "dessert" / "desert", "mary" / "mark": two words, no typo
    return True


def one_keystroke(x: str, y: str) -> bool:
    """One letter replaced, dropped or added, or two neighbouring letters swapped."""
    if x == y or abs(len(x) - len(y)) > 1:
        return False
    if len(x) == len(y):
        diff = [i for i in range(len(x)) if x[i] != y[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]])
    short, long = (x, y) if len(x) < len(y) else (y, x)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def _stem(word: str) -> str:
    """A crude English stem for matching inflections: "stops", "stopped" and "stop"
    meet, as do "changes", "changed" and "change"; never applied to short words."""
    if len(word) < 4 or not word.isalpha():
        return word
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 \
                and not (suffix == "s" and word.endswith("ss")):
            word = word[: len(word) - len(suffix)] + keep
            break
    if len(word) >= 4 and word[-1] == "e":
        word = word[:-1]
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # "stopped" -> "stopp" -> "stop"
    return word
