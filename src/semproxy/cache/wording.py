"""The words of a prompt as the near-miss check reads them.

Pure and cheap (a few regular expressions over a short text): it runs on the
incoming prompt and on the one stored beside a candidate answer. What it
normalises is what two wordings of one question often differ in without
meaning anything else: case, contractions, digits written as words
("fifteen percent" is "15 %"), thousands separators, currency signs and the
plural of a currency ("$20" and "20 dollars").
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

_CONTRACTIONS = tuple((re.compile(pattern), replacement) for pattern, replacement in (
    (r"\bcan'?t\b", "can not"), (r"\bwon'?t\b", "will not"), (r"\bshan't\b", "shall not"),
    (r"\bcannot\b", "can not"), (r"n't\b", " not"), (r"'re\b", " are"), (r"'ll\b", " will"),
    (r"'ve\b", " have"), (r"'m\b", " am"), (r"'d\b", " would"),
    (r"\b(what|that|it|there|here|who|where|how|when|let)'s\b", r"\1 is"), (r"'s\b", ""),
))
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# Contractions written without an apostrophe that the patterns above expand.
_BARE_CONTRACTIONS = frozenset({"cant", "wont", "cannot"})
_CURRENCY_SIGNS = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yen", "%": "percent"}
_ALIASES = {"usd": "dollar", "bucks": "dollar", "eur": "euro", "gbp": "pound", "jpy": "yen",
            "pct": "percent"}
# Not "one": as often a pronoun ("the next one", "have a good one") as a number.
_UNITS = {"zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
          "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
          "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
          "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
          "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_ORDINALS = {"first": 1, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
             "twentieth": 20, "thirtieth": 30, "hundredth": 100}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
# A number word's value, as `_word_value` reads it (units, then scales, then ordinals).
_NUMBER_WORDS = {**_ORDINALS, **_SCALES, **_UNITS}
# A chunk that reads as code: snake_case, camelCase, dotted.names, a::path, call(),
# a --flag, or an UPPER-case keyword of two letters or more.
_IDENTIFIER = re.compile(
    r"\w*_\w*|\w*[a-z][A-Z]\w*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|\w+(?:::\w+)+"
    r"|\w+\(\)|--?[a-z][\w-]*|[A-Z]{2,}\w*")
# Quote marks, typographic ones as escapes: \u201c \u201d double, \u2018 \u2019 single.
_QUOTED = re.compile("(?:^|(?<=[\\s(]))[\"'`\u201c\u2018]([^\"'`\u201d\u2019]{1,200})"
                     "[\"'`\u201d\u2019](?=$|[\\s,.?!:;)])")
_WORD = re.compile(r"[a-z]+|\d+(?:\.\d+)?|[^\sa-z\d]")
_ORDINAL_DIGITS = re.compile(r"\d+(st|nd|rd|th)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_TRIM = ".,?!:;\"'`()[]{}\u201c\u201d\u2018\u2019"


@dataclass(frozen=True, slots=True)
class Wording:
    """One prompt, read once: its words, the numbers it names and the strings it quotes.

    `words` are lower case, contractions expanded, numbers written as digits,
    multi-word names joined by `_` ("new_york"); `marked` are the words this
    prompt itself shows to be names (capitalised inside a sentence, or code).
    """

    words: tuple[str, ...]
    numbers: tuple[str, ...]
    quoted: tuple[str, ...]
    marked: frozenset[str]


@cache
def word_list(name: str) -> frozenset[str]:
    """A shipped list (`names.txt`, `units.txt`): one entry a line, `#` comments."""
    text = resources.files("semproxy.cache").joinpath(name).read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


@cache
def _multiword() -> re.Pattern[str]:
    phrases = sorted((n for n in word_list("names.txt") if " " in n), key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(p) for p in phrases) + r")\b")


@cache
def _multiword_starts() -> frozenset[str]:
    """The first word of every multi-word name: a text with none of them has no name to
    join, and skips the long alternation above."""
    return frozenset(n.split(" ", 1)[0] for n in word_list("names.txt") if " " in n)


@functools.lru_cache(maxsize=4096)
def read(text: str) -> Wording:
    """The wording of `text` (any length; callers cap what they store). Cached: a
    stored prompt is read again on every lookup that compares it."""
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    if not text.islower():  # (a prompt in lower case, the most, has no capitals to count)
        letters = [c for c in text if c.isalpha()]
        if letters and sum(c.isupper() for c in letters) > 0.6 * len(letters):
            text = text.lower()  # a shouted prompt: its capitals say nothing of names or code
    quoted = tuple(q.strip().lower() for q in _QUOTED.findall(text))
    marked: set[str] = set()
    words: list[str] = []
    chunks = text.split()
    # An all lower-case text has no capital to count: not title case (no call).
    titled = False if text.islower() else _title_case(chunks)
    for i, chunk in enumerate(chunks):
        if chunk.isalpha() and chunk.islower() and chunk not in _BARE_CONTRACTIONS:
            words.append(_ALIASES.get(chunk) or _singular(chunk))  # most words: no regex
            continue
        bare = chunk.strip(_TRIM) if not chunk.endswith("()") else chunk.lstrip(_TRIM)
        if bare and _IDENTIFIER.fullmatch(bare) and not bare.isdigit():
            marked.add(bare.lower())
            words.append(bare.lower())
            continue
        if bare[:1].isupper() and i > 0 and not titled \
                and not _sentence_start(chunks[i - 1], chunk) and bare != "I":
            marked.add(bare.lower())
        words.extend(_plain_words(chunk.lower()))
    if _multiword_starts().isdisjoint(words):
        tokens, numbers = _numbers(words)
    else:
        joined = _multiword().sub(lambda m: m.group(1).replace(" ", "_"), " ".join(words))
        tokens, numbers = _numbers(joined.split())
    return Wording(tuple(tokens), tuple(numbers), quoted, frozenset(marked))


def _title_case(chunks: list[str]) -> bool:
    """Most words capitalised ("What Is The Best Airline"): capitals mark no name."""
    words = [c for c in chunks if c[:1].isalpha()]
    return len(words) >= 3 and sum(c[0].isupper() for c in words) >= 0.6 * len(words)


def _sentence_start(before: str, chunk: str) -> bool:
    return before.endswith((".", "?", "!", ":")) or chunk.startswith(("\"", "'", "“"))


def _plain_words(chunk: str) -> list[str]:
    # Every contraction pattern needs an apostrophe but the three bare ones.
    if "'" in chunk or "can" in chunk or "won" in chunk:
        for pattern, replacement in _CONTRACTIONS:
            chunk = pattern.sub(replacement, chunk)
    if "," in chunk:
        chunk = _THOUSANDS.sub("", chunk)  # 50,000 -> 50000
    out: list[str] = []
    sign: str | None = None  # "$20" reads as "20 dollar", as "20 dollars" does
    for token in _WORD.findall(chunk):
        if token in _CURRENCY_SIGNS:
            if sign is not None:
                out.append(sign)
            sign = _CURRENCY_SIGNS[token]
            if token == "%":
                out.append(sign)
                sign = None
        elif token.isalpha() or token[0].isdigit():
            out.append(_ALIASES.get(token, _singular(token)))
            if sign is not None and token[0].isdigit():
                out.append(sign)
                sign = None
    return [*out, sign] if sign is not None else out


def _singular(token: str) -> str:
    if token.endswith("s") and token[:-1] in word_list("names.txt"):
        return token[:-1]  # "dollars" names what "dollar" names
    return token


def _numbers(tokens: list[str]) -> tuple[list[str], list[str]]:
    """The tokens with every number as digits, and the numbers in order."""
    out: list[str] = []
    numbers: list[str] = []
    run: list[int] = []  # the values of a run of number words ("one hundred forty four")
    padded = [*tokens, ""]
    words = _NUMBER_WORDS
    for i, token in enumerate(padded):
        # `_word_value`, without a call for the common token (no number in it)
        value = words.get(token)
        if value is None and token[:1].isdigit():
            value = _word_value(token)
        if token == "one" and (run or padded[i + 1] in _SCALES):
            value = 1  # "one hundred", "twenty one": a number after all
        if value is not None:
            run.append(value)
            continue
        if run and token != "and":
            number = str(_run_value(run))
            out.append(number)
            numbers.append(number)
            run = []
        elif run:
            continue
        digits = None if token.isalpha() else _digits(token)  # most tokens: no call
        if digits is not None:
            numbers.append(digits)
        if token:
            out.append(token)
    return out, numbers


def _word_value(token: str) -> int | None:
    if token in _UNITS or token in _SCALES:
        return _UNITS.get(token, _SCALES.get(token))
    if token in _ORDINALS:
        return _ORDINALS[token]
    if token[:1].isdigit() and _ORDINAL_DIGITS.fullmatch(token):
        return int(token[:-2])
    return None


def _run_value(run: list[int]) -> int:
    total, current = 0, 0
    for value in run:
        if value in _SCALES.values() and value >= 100:
            current = max(current, 1) * value
            if value >= 1000:
                total, current = total + current, 0
        else:
            current += value
    return total + current


def _digits(token: str) -> str | None:
    """The number in a token: "15", "3.50" -> "3.5", "ww2" -> "2", "401k" -> "401"."""
    if token.isalpha():
        return None  # most tokens: no regular expression
    found = _NUMBER.findall(token)
    if not found:
        return None
    return ".".join(f"{float(n):g}" if "." in n else str(int(n)) for n in found)
