"""The near-miss check, with pairs whose answer anyone can judge."""

from __future__ import annotations

import pytest

from semproxy.cache.nearmiss import near_miss
from semproxy.cache.wording import read


def _rule(a: str, b: str) -> str | None:
    return near_miss(read(a), read(b))


@pytest.mark.parametrize(("a", "b", "rule"), [
    ("set a timer for 15 minutes", "set a timer for 50 minutes", "number"),
    ("what is 2 to the power of 10", "what is 2 to the power of twelve", "number"),
    ("which birds can fly", "which birds cannot fly", "negation"),
    ("i want to keep my subscription", "i don't want to keep my subscription", "negation"),
    ("how do i turn on dark mode", "how do i turn off dark mode", "opposite"),
    ('translate "i am hungry" into french', 'translate "i am thirsty" into french', "quoted"),
    ("what does os.path.join return", "what does os.path.split return", "name"),
    ("how do i call getUserById", "how do i call getUserByEmail", "name"),
    ("what is the population of canada", "what is the population of mexico", "name"),
    ("call Sarah about the report", "call david about the report", "name"),
    ("is a crocodile bigger than an alligator", "is an alligator bigger than a crocodile",
     "order"),
    ("convert 5 km to miles", "convert 5 miles to km", "unit"),
    ("how long do i bake salmon", "how long do i bake chicken thighs", "swap"),
    ("how are you", "how old are you", "swap"),
])
def test_prompts_that_differ_in_what_decides_the_answer_are_near_misses(
        a: str, b: str, rule: str) -> None:
    assert _rule(a, b) == rule
    assert _rule(b, a) == rule


@pytest.mark.parametrize(("a", "b"), [
    ("what is 15% of 80", "what's fifteen percent of 80"),
    ("how much is $20 in euros", "how much is 20 dollars in euros"),
    ("what is the square root of 144", "what's the square root of one hundred forty four"),
    ("I live in Paris, what should I see", "i live in paris what should i see"),
    ("who wrote pride and prejudice", "pride and prejudice was written by whom"),
    ("tell me a joke", "could you tell me a joke please"),
    ("what is the meaning of life", "whats the purpose of life, in your view"),
])
def test_rewordings_of_one_question_are_not_near_misses(a: str, b: str) -> None:
    assert _rule(a, b) is None


def test_numbers_are_read_as_digits_whatever_their_spelling() -> None:
    assert read("two thousand five hundred and $50,000, 3.50").numbers == ("2500", "50000",
                                                                         "3.5")
    assert read("march 1st").numbers == read("march first").numbers == ("1",)
