"""`balancer.context: conversation`: follow-ups stay, real switches move, pastes are skipped.

FakeEmbeddings: "python"/"code"/"function" lie on axis 0 (instance code),
"translate"/"french" on axis 1 (translate); a turn without those words, such as
"tweak the wording", is orthogonal to both, like a topic-free follow-up.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from tests.conftest import GatewayFactory
from tests.fakes import FakeEmbeddings

from semproxy.config.loader import load_data
from semproxy.quality.evaluate import evaluate
from semproxy.quality.labelled import parse_item
from semproxy.runtime.compile import router_for
from semproxy.semantic.conversation import has_followup_cue
from semproxy.semantic.explain import explain_with
from semproxy.semantic.query import RoutingInput, earlier_turns

from .conftest import ask, remote_embeddings, semantic_config


def talk(*turns: str, model: str = "auto") -> dict[str, Any]:
    """User turns with an assistant answer between each two."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        if messages:
            messages.append({"role": "assistant", "content": "Sure, here you go."})
        messages.append({"role": "user", "content": turn})
    return {"model": model, "messages": messages}


def conversation_config(url: str, **settings: Any) -> dict[str, Any]:
    return semantic_config(remote_embeddings(url), context="conversation",
                           **({"conversation": settings} if settings else {}))


async def test_a_follow_up_stays_with_the_instance_of_the_conversation(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    aware = await gateway(conversation_config(embed.url))
    plain = await gateway(semantic_config(remote_embeddings(embed.url)))
    body = talk("write a python function", "tweak the wording")
    kept, alone = await ask(http, aware, body), await ask(http, plain, body)
    assert (kept.served_by, kept.headers["X-AI-Semantic-Route"]) == ("code", "code")
    # Oldest turn first: the first turn decided, the follow-up weighed nothing.
    assert kept.headers["X-AI-Semantic-Context"] == "1,0"
    # The default (the proposal's rule) routes the follow-up alone: nothing clears.
    assert (alone.served_by, alone.headers["X-AI-Semantic-Reason"]) == ("default",
                                                                         "below_threshold")
    assert "X-AI-Semantic-Context" not in alone.headers


async def test_a_clear_new_topic_moves_the_conversation_and_its_follow_ups(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(conversation_config(embed.url))
    switched = await ask(http, gw, talk("write a python function", "translate it to french"))
    after = await ask(http, gw, talk("write a python function", "translate it to french",
                                     "tweak the wording"))
    assert (switched.served_by, switched.headers["X-AI-Semantic-Context"]) == ("translate",
                                                                                "0,1")
    assert (after.served_by, after.headers["X-AI-Semantic-Context"]) == ("translate", "0,1,0")


async def test_a_weak_switch_below_the_margin_does_not_move_the_conversation(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    # The new turn scores code 0.6 and translate 0.8: a lead of 0.2, a lift of 0.1.
    gw = await gateway(conversation_config(embed.url, switch_margin=0.25))
    answer = await ask(http, gw, talk("write a python function",
                                      "vec:0.6,0.8 some french"))
    assert answer.served_by == "code"
    lenient = await gateway(conversation_config(embed.url, switch_margin=0.15))
    assert (await ask(http, lenient, talk("write a python function",
                                          "vec:0.6,0.8 some french"))).served_by == "translate"


async def test_tool_results_and_long_pasted_turns_are_not_read(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(conversation_config(embed.url, max_turn_chars=200))
    body = talk("please translate into french", "python function " * 40, "tweak the wording")
    body["messages"][2:2] = [{"role": "assistant", "content": None, "tool_calls": []},
                             {"role": "tool", "content": "python code python code"}]
    seen = len(embed.inputs_seen)  # the examples were embedded at start
    answer = await ask(http, gw, body)
    # The pasted block (a clear "code" turn if it were read) and the tool output are skipped.
    assert (answer.served_by, answer.headers["X-AI-Semantic-Context"]) == ("translate", "1,0")
    assert sorted(embed.inputs_seen[seen:]) == ["please translate into french", "tweak the wording"]


async def test_earlier_turns_come_from_the_cache_so_only_the_new_turn_is_embedded(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(conversation_config(embed.url))
    await ask(http, gw, talk("write a python function"))
    seen = len(embed.inputs_seen)
    answer = await ask(http, gw, talk("write a python function", "tweak the wording"))
    assert answer.served_by == "code"
    assert embed.inputs_seen[seen:] == ["tweak the wording"]


async def test_only_the_last_max_turns_user_turns_are_read(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(conversation_config(embed.url, max_turns=2))
    answer = await ask(http, gw, talk("write a python function", "translate to french",
                                      "tweak the wording"))
    assert (answer.served_by, answer.headers["X-AI-Semantic-Context"]) == ("translate", "1,0")


def test_earlier_turns_skip_non_user_and_blank_turns_oldest_first() -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "x"},
                {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
                {"role": "user", "content": "b"}, {"role": "tool", "content": "t"},
                {"role": "user", "content": "last"}]
    assert earlier_turns(messages, 5, 100) == ("a", "b")
    assert earlier_turns(messages, 2, 100) == ("b",)


async def test_explain_and_batches_decide_conversations_as_a_request_would(
    embed: FakeEmbeddings,
) -> None:
    config = load_data(conversation_config(embed.url), {})
    async with router_for(config, "r1") as router:
        query = RoutingInput("tweak the wording", ("translate into french",))
        explained = await explain_with(router, query)
        batch = await router.route_many([query, RoutingInput("tweak the wording")])
    assert explained["pick"] == "translate"
    assert explained["context"] == [{"turn": "translate into french", "weight": 1.0},
                                    {"turn": "tweak the wording", "weight": 0.0}]
    assert [d.pick for d in batch] == ["translate", "default"]
    assert batch[0].context == (1.0, 0.0) and batch[1].context == ()


async def test_eval_reads_conversations_from_labelled_messages(embed: FakeEmbeddings) -> None:
    lines = [talk("translate into french", "tweak the wording"),
             talk("write a python function", "now translate it to french"),
             talk("write a python function", "tweak the wording", "why is that")]
    items = [parse_item({**body, "instance": label}, f"line {n}") for n, (body, label)
             in enumerate(zip(lines, ["translate", "translate", "code"], strict=True))]
    assert items[2].earlier == ("write a python function", "tweak the wording")
    for context, right in (("conversation", 3), ("last_user", 1)):
        config = load_data(semantic_config(remote_embeddings(embed.url), context=context), {})
        async with router_for(config, "r1") as router:
            result = await evaluate(router, items)
        assert sum(d.pick == i.instance for d, i in zip(result.decisions, items,
                                                        strict=True)) == right


async def test_a_turn_closer_to_the_shipped_follow_ups_than_to_its_instance_does_not_switch(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    # Scores translate 0.6 (it clears 0.5, leads code by 0.6), but lies at 0.8 from the
    # shipped follow-ups, which the fake puts on its keyword-free last axis.
    turn = "vec:0,0.6,0,0,0,0,0,0.8"
    strict = await gateway(conversation_config(embed.url))
    loose = await gateway(conversation_config(embed.url, followup_margin=-0.5))
    body = talk("write a python function", turn)
    assert (await ask(http, strict, body)).served_by == "code"
    assert (await ask(http, loose, body)).served_by == "translate"


async def test_a_follow_up_on_the_same_instance_does_not_take_the_anchor(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    # The middle turn scores code 0.6 (it clears 0.5) but the follow-ups 0.8: it reads
    # like a follow-up, so it inherits, and the first turn stays the anchor for both.
    gw = await gateway(conversation_config(embed.url))
    answer = await ask(http, gw, talk("write a python function", "vec:0.6,0,0,0,0,0,0,0.8",
                                      "tweak the wording"))
    assert (answer.served_by, answer.headers["X-AI-Semantic-Context"]) == ("code", "1,0,0")


async def test_an_instance_whose_examples_read_like_follow_ups_needs_a_clearer_turn(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    # The turn scores chat 0.96 and the follow-ups (the fake's last axis) 0.6. When chat's
    # own example leans towards the follow-ups, they score chat 0.8 where they score the
    # others 0, so chat needs a turn 0.53 further above them: this one stays on code.
    turn = "vec:0,0,0,0,0,0,0.8,0.6"
    outcomes = []
    for example in ("vec:0,0,0,0,0,0,0.6,0.8", "vec:0,0,0,0,0,0,1,0"):
        config = conversation_config(embed.url)
        config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"].append(
            {**config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][2],
             "name": "chat", "examples": [example]})
        gw = await gateway(config)
        outcomes.append((await ask(http, gw, talk("write a python function", turn))).served_by)
    assert outcomes == ["code", "chat"]


async def test_a_turn_worded_like_a_follow_up_needs_the_cue_margin_more_to_switch(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    # Both turns score translate 0.72 and the follow-ups 0.70: 0.02 above them clears
    # followup_margin -0.01, but not -0.01 + cue_margin 0.08 when the words point back.
    cued, plain = "vec:0,0.6,0,0,0,0,0,0.58 do that too", "vec:0,0.6,0,0,0,0,0,0.58 do the thing"
    gw = await gateway(conversation_config(embed.url))
    off = await gateway(conversation_config(embed.url, cue_margin=0.0))
    assert (await ask(http, gw, talk("write a python function", cued))).served_by == "code"
    assert (await ask(http, gw, talk("write a python function", plain))).served_by == "translate"
    assert (await ask(http, off, talk("write a python function", cued))).served_by == "translate"


def test_follow_up_cues_are_words_and_openings_not_substrings() -> None:
    assert has_followup_cue("could you do that for the car too")
    assert has_followup_cue("And on monday?")
    assert has_followup_cue("same for my sister as well")
    # "thatched" holds "that", "item" holds "it", "android" opens with "and": no cue.
    assert not has_followup_cue("how do I fix a thatched roof item on android")
    assert not has_followup_cue("what is my bank balance")
    # Openings count as whole words only.
    assert has_followup_cue("ok, and for tomorrow") and has_followup_cue("hmm why")
    assert not has_followup_cue("okra recipes for dinner")
    assert not has_followup_cue("sofa prices near me") and not has_followup_cue("butter chicken")
