"""Near misses: two prompts an embedding calls the same that deserve different answers.

An embedding averages meaning over the words, so "how many calories in a
banana" and "... in an avocado", "convert celsius to fahrenheit" and the
reverse, or a question and its negation score 0.9 or more. Whatever the
similarity, a semantic hit is refused when the two prompts differ in what
decides the answer:

- `number`: the numbers they name, in order (digits and number words alike);
- `negation`: how many negations they carry (not, no, never, without, ...);
- `opposite`: one says a word whose opposite the other says (on / off,
  enable / disable, before / after, buy / sell);
- `quoted`: the strings they quote;
- `name`: the names and code identifiers either names, in order: places,
  days, languages, currencies and people from a shipped list, words
  capitalised inside a sentence, and anything that reads as code
  (snake_case, camelCase, dotted.names, --flags);
- `unit`: the units both name (a prompt without any may match one with);
- `order`: the same content words in another order;
- `swap`: the same sentence with content words swapped, added or dropped ("bake
  salmon" / "bake chicken thighs", "how are you" / "how old are you"), once
  courtesy, inflection and typos are set aside (cache/difference.py): the
  embedding cannot tell a synonym from another object, so the cache does not guess;
- `question`: the same sentence asking another question ("when did i change my
  oil" / "when should i change my oil").

Each rule costs paraphrases that differ in that way ("what's my credit score" /
"what's my credit rating" is a swap), and a miss costs one upstream call while
a wrong hit serves a wrong answer. The rates each rule costs and saves were
measured on the tuning half of tests/quality/data/cache (docs/en/cache.md).
"""

from __future__ import annotations

from collections import Counter

from semproxy.cache.difference import Difference, differ
from semproxy.cache.wording import Wording, word_list

NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor",
                       "without", "nowhere"})
_OPPOSITE_PAIRS = (
    ("on", "off"), ("enable", "disable"), ("enabled", "disabled"), ("open", "closed"),
    ("open", "close"), ("allow", "block"), ("legal", "illegal"), ("before", "after"),
    ("increase", "decrease"), ("raise", "lower"), ("buy", "sell"), ("add", "remove"),
    ("start", "stop"), ("lock", "unlock"), ("up", "down"), ("most", "least"),
    ("maximum", "minimum"), ("max", "min"), ("best", "worst"), ("more", "less"),
    ("higher", "lower"), ("high", "low"), ("bigger", "smaller"), ("larger", "smaller"),
    ("longer", "shorter"), ("faster", "slower"), ("hot", "cold"), ("import", "export"),
    ("include", "exclude"), ("accept", "reject"), ("safe", "toxic"), ("safe", "unsafe"),
    ("benefits", "downsides"), ("pros", "cons"), ("encrypt", "decrypt"),
    ("upload", "download"), ("push", "pull"), ("connect", "disconnect"), ("mute", "unmute"),
    ("subscribe", "unsubscribe"), ("install", "uninstall"), ("arrival", "departure"),
    ("north", "south"), ("east", "west"), ("left", "right"), ("first", "last"),
    ("next", "previous"), ("next", "last"), ("early", "late"), ("earlier", "later"),
    ("input", "output"), ("true", "false"), ("positive", "negative"), ("plus", "minus"),
    ("above", "below"), ("inside", "outside"), ("deposit", "withdraw"), ("debit", "credit"),
    ("checking", "savings"), ("send", "receive"), ("borrow", "lend"), ("win", "lose"),
    ("men", "women"), ("male", "female"), ("sync", "unsync"), ("include", "leave"),
)


def _opposites() -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for a, b in _OPPOSITE_PAIRS:
        found.setdefault(a, set()).add(b)
        found.setdefault(b, set()).add(a)
    return {word: frozenset(others) for word, others in found.items()}


OPPOSITES = _opposites()
# Words that carry no topic: a swap of these ("what" / "which") is wording, not meaning.
_STOPWORDS = """
a an the and or but if then so of to in on at by for with from into onto about as is are
was were be been being am do does did doing have has had having will would shall should can
could may might must i me my mine you your yours we our us they them their he him his she her
it its this that these those there here what which who whom whose when where why how please
tell show give let know want need like get find any some all just also too very really much
many more most again now then than up out over only own same such can't 1 one
hey hi ok okay well yes yeah would could kind sort type way thing things
"""
STOPWORDS = frozenset(_STOPWORDS.split())
# Words whose order carries the meaning: "celsius to fahrenheit", "bigger than".
DIRECTIONS = frozenset({"to", "from", "into", "than", "vs", "versus", "over", "before", "after",
                        "by", "per"})
# Two wordings whose words line up at least this much (difflib's ratio, after
# courtesy, inflection and typos) are one sentence edited, not a rewording: a content
# word one side has and the other lacks is then a swap, another question word another
# question. Chosen on the tuning half among 0.5, 0.55 and 0.6 (the most paraphrase
# hits in the default mode within the wrong-hit limits); at 0.5 "who wrote pride and
# prejudice" / "pride and prejudice was written by whom" would be one sentence.
SAME_SENTENCE = 0.6


def near_miss(a: Wording, b: Wording, difference: Difference | None = None) -> str | None:
    """The first rule that tells `a` and `b` apart (see the module docstring), or None.
    `difference` is `differ(a, b)` when the caller has it already."""
    if a.numbers != b.numbers:
        return "number"
    if _count(a, NEGATIONS) != _count(b, NEGATIONS):
        return "negation"
    if _has_opposite(a, b) or _has_opposite(b, a):
        return "opposite"
    if a.quoted != b.quoted:
        return "quoted"
    if _named(a, b) != _named(b, a):
        return "name"
    if _units_differ(a, b):
        return "unit"
    if _reordered(a, b):
        return "order"
    d = difference or differ(a, b)
    if d.overlap >= SAME_SENTENCE and (d.only_a or d.only_b):
        return "swap"
    if d.overlap >= SAME_SENTENCE and d.questions:
        return "question"
    return None


def _count(w: Wording, vocabulary: frozenset[str]) -> int:
    return sum(1 for word in w.words if word in vocabulary)


def _has_opposite(a: Wording, b: Wording) -> bool:
    own, other = set(a.words), set(b.words)
    return any(word not in other and OPPOSITES[word] & other - own
               for word in own if word in OPPOSITES)


def _named(w: Wording, other: Wording) -> list[str]:
    """The names `w` shows, in order: those in either prompt, so that a name one prompt
    capitalises and the other writes in lower case counts on both sides."""
    names = word_list("names.txt")
    marked = w.marked | other.marked
    seen: list[str] = []
    for word in w.words:
        if (word in marked or word in names or word.replace("_", " ") in names) \
                and word not in seen:
            seen.append(word)
    return seen


def _units_differ(a: Wording, b: Wording) -> bool:
    units = word_list("units.txt")
    ua = [w for w in a.words if w in units]
    ub = [w for w in b.words if w in units]
    return bool(ua) and bool(ub) and ua != ub


def _reordered(a: Wording, b: Wording) -> bool:
    ca = [w for w in a.words if w not in STOPWORDS]
    cb = [w for w in b.words if w not in STOPWORDS]
    return ca != cb and Counter(ca) == Counter(cb) and bool(DIRECTIONS & set(a.words)
                                                           & set(b.words))
