"""The hit rule: what the word-level reading forgives, what it refuses, and the lookup."""

from __future__ import annotations

import numpy as np
import pytest
from tests.cache.test_store import ANSWER, V1, Clock, _cache, _plan

from semproxy.cache.difference import differ, is_typo, one_keystroke, respell
from semproxy.cache.hitrule import SIMILARITY, HitRule, judge, rule_for
from semproxy.cache.lookup import Hit, Refused
from semproxy.cache.wording import read

RULE = HitRule(threshold=0.8, same_words=0.0)


def _judge(a: str, b: str, cosine: float = 0.5) -> str | None:
    return judge(read(a), read(b), cosine, RULE)


@pytest.mark.parametrize(("a", "b"), [
    ("how many calories in a banana", "how many calories in a bananna"),  # a typo
    ("where's my credit score", "wheer's my credit score"),
    ("what is the capital of france", "tell me the capital of france"),  # "is" is wording
    ("can i use cheddar instead of colby", "can i use cheddar instead of colby thanks"),
    ("stop talking so fast", "pleasse stop talking so fast"),  # a mistyped courtesy
    ("how do i stop my cat scratching", "how do i stops my cat scratching"),  # inflection
    ("I need an italian meal suggestion", "i need an itslian meal suggestion"),  # name typo
    ("WHAT IS THE TALLEST MOUNTAIN", "what is the tallest mountain"),  # shouted
    ("What Is The Tallest Mountain", "what is the tallest mountain"),  # title case
    ("good morning! where do ducks sleep", "where do ducks sleep"),
])
def test_the_same_question_typed_again_is_a_hit_at_any_cosine(a: str, b: str) -> None:
    assert _judge(a, b, cosine=0.0) is None
    assert _judge(b, a, cosine=0.0) is None


@pytest.mark.parametrize(("a", "b", "reason"), [
    ("how do i boil potatoes", "how do i broil potatoes", "swap"),  # two English words
    ("call mary about the report", "call mark about the report", "name"),  # two names
    ("when did i change my oil", "when should i change my oil", "question"),
    # two separate edits in one sentence, far apart
    ("how much does the pharmacy on the corner of main street charge for delivery",
     "how much does the bakery on the corner of main street charge for parking", "swap"),
    ("how are you", "how old are you", "swap"),  # an added content word
])
def test_one_sentence_edited_to_ask_something_else_is_refused(a: str, b: str,
                                                             reason: str) -> None:
    assert _judge(a, b, cosine=0.99) == reason
    assert _judge(b, a, cosine=0.99) == reason


def test_a_rewording_needs_the_threshold_and_the_rule_follows_the_route() -> None:
    a, b = "who made you", "which company programmed you"
    assert _judge(a, b, cosine=0.79) == SIMILARITY
    assert _judge(a, b, cosine=0.8) is None
    assert judge(read(a), read(b), 0.79, HitRule(0.8, 0.0, near_miss=False)) == SIMILARITY
    route = rule_for("wordllama", 0.9)
    assert route.threshold == 0.9 and route.same_words <= 0.9 and route.floor == 0.0
    assert rule_for("unknown-model", None).threshold == 0.95


def test_typos_are_one_keystroke_with_the_first_letter_kept() -> None:
    assert one_keystroke("count", "counnt") and one_keystroke("vacation", "vacatoin")
    assert not one_keystroke("count", "cuont2") and not one_keystroke("abc", "abc")
    assert is_typo("vacation", "vacatoin") and not is_typo("count", "mount")
    assert not is_typo("dessert", "desert") and not is_typo("cat", "cap")
    fixed, typos = respell(read("my vacation days"), read("my vacatoin days"))
    assert fixed.words == ("my", "vacation", "days") and typos == 1
    assert differ(read("my vacation days"), fixed).same_words


async def test_a_lookup_serves_a_prompt_typed_again_below_the_rewording_threshold() -> None:
    cache, _ = _cache(Clock())
    await cache.store(_plan("how many calories in a banana"), ANSWER, V1)
    slanted = np.array([0.5, 0.866, 0.0], dtype=np.float32)  # cosine 0.5 with V1
    hit = await cache.lookup(_plan("how many calories in a bananna thanks"), slanted)
    assert isinstance(hit, Hit) and hit.layer == "semantic"
    refused = await cache.lookup(_plan("how many calories in an avocado"), slanted)
    assert isinstance(refused, Refused) and refused.reason == "swap"
