"""The shipped quickstart routes its own kind of prompts: code, translation, and
everything else to the catchall, with the in-process model (no network).

The threshold and examples were chosen on TUNED; HELD_OUT was written before
looking at its scores and is only measured (9 of 12 on the commit that set them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from semproxy.config.loader import load_file
from semproxy.runtime.compile import explain

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"

TUNED = {
    "code": ["explain quicksort step by step", "write a javascript function that sorts an array",
             "why does my program crash with a null pointer exception", "optimize this sql query",
             "write a python function that reverses a string", "how do I fix this compile error",
             "implement binary search in go", "refactor this class to use dependency injection"],
    "translate": ["translate good morning into german", "how do you say thank you in japanese",
                  "summarize this article in two sentences",
                  "translate this paragraph into spanish",
                  "rewrite this email to sound more polite", "what does bonjour mean in english"],
    "default": ["what is the weather like today", "tell me a joke",
                "who won the world cup in 2018", "recommend a good book",
                "what should I cook for dinner", "how tall is mount everest"],
}
HELD_OUT = {
    "code": ["implement quicksort in python", "my java code throws an index out of bounds error",
             "write a bash script that renames files", "what does this regular expression match"],
    "translate": ["translate 'where is the station' into italian",
                  "how would you say good night in german", "give me a short summary of this text",
                  "paraphrase this sentence in simpler words"],
    "default": ["what is the capital of australia", "suggest a name for my cat",
                "how many calories are in an apple", "plan a weekend trip to the mountains"],
}


async def picks(prompts: dict[str, list[str]]) -> list[tuple[str, str, str]]:
    config = load_file(QUICKSTART)
    return [(want, (await explain(config, "auto", p))["pick"], p)
            for want, texts in prompts.items() for p in texts]


async def test_the_quickstart_routes_every_tuning_prompt_to_its_instance() -> None:
    wrong = [row for row in await picks(TUNED) if row[0] != row[1]]
    assert wrong == []


@pytest.mark.parametrize("prompt", ["explain quicksort step by step",
                                    "implement quicksort in python"])
async def test_a_coding_question_reaches_code_not_the_catchall(prompt: str) -> None:
    result = await explain(load_file(QUICKSTART), "auto", prompt)
    assert result["pick"] == "code", result


async def test_held_out_prompts_route_mostly_right_and_off_topic_ones_fall_back() -> None:
    rows = await picks(HELD_OUT)
    right = sum(want == got for want, got, _ in rows)
    assert right >= 9, rows  # 9 of 12 measured; a regression shows here
    assert all(got == "default" for want, got, _ in rows if want == "default")
