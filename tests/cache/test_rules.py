"""Keys, client control and what is stored: pure functions, checked by hand."""

from __future__ import annotations

from semproxy.cache import keys, policy
from semproxy.cache.control import BYPASS, REFRESH, client_control
from semproxy.cache.plan import Bypass, CachePlan, compile_spec, plan
from semproxy.config.cache import AICache, BypassRule

UP = keys.Upstream("gpt", "openai", "https://api.openai.com/v1/chat/completions",
                   {"model": "gpt-4o-mini"})


def _chat(text: str, **extra: object) -> dict[str, object]:
    return {"model": "auto", "messages": [{"role": "system", "content": "be brief"},
                                           {"role": "user", "content": text}], **extra}


def _plan(conf: dict[str, object], payload: dict[str, object], consumer: str | None = "alice",
          headers: dict[str, str] | None = None, upstream: keys.Upstream = UP
          ) -> CachePlan | Bypass:
    spec = compile_spec("r1", AICache.model_validate(conf), "wordllama")
    return plan(spec, payload, upstream, headers or {}, consumer)


def test_exact_key_ignores_stream_but_not_sampling_parameters() -> None:
    base = _plan({}, _chat("hi"))
    streamed = _plan({}, _chat("hi", stream=True, stream_options={"include_usage": True}))
    warmer = _plan({}, _chat("hi", temperature=0.9))
    assert isinstance(base, CachePlan) and isinstance(streamed, CachePlan)
    assert isinstance(warmer, CachePlan)
    assert base.exact == streamed.exact != warmer.exact


def test_a_change_of_the_instance_model_or_options_changes_every_key() -> None:
    conf = {"layers": ["exact", "semantic"], "semantic": {}}
    old = _plan(conf, _chat("hi"))
    new = _plan(conf, _chat("hi"), upstream=keys.Upstream(UP.name, UP.provider, UP.endpoint,
                                                          {"model": "gpt-4o"}))
    assert isinstance(old, CachePlan) and isinstance(new, CachePlan)
    assert old.exact != new.exact and old.partition != new.partition


def test_consumers_have_their_own_namespace_unless_the_route_shares() -> None:
    alice, bob = _plan({}, _chat("hi")), _plan({}, _chat("hi"), consumer="bob")
    shared = {"cache_key": {"include_consumer": False}}
    s_alice, s_bob = _plan(shared, _chat("hi")), _plan(shared, _chat("hi"), consumer="bob")
    assert isinstance(alice, CachePlan) and isinstance(bob, CachePlan)
    assert isinstance(s_alice, CachePlan) and isinstance(s_bob, CachePlan)
    assert alice.exact != bob.exact and s_alice.exact == s_bob.exact
    assert ":consumer=alice:" in alice.exact and "consumer=" not in s_alice.exact


def test_a_hostile_consumer_or_variable_value_cannot_forge_a_scope() -> None:
    found = _plan({"cache_key": {"include_vars": ["tenant"]}}, _chat("hi"), consumer="a:b=*")
    assert isinstance(found, CachePlan)
    assert "consumer=a%3Ab%3D%2A:" in found.exact


def test_the_partition_holds_everything_but_the_last_user_turn() -> None:
    conf = {"layers": ["exact", "semantic"], "semantic": {}}
    a, b = _plan(conf, _chat("what is a hash table")), _plan(conf, _chat("explain hash tables"))
    other_system = _plan(conf, {"messages": [{"role": "system", "content": "be long"},
                                             {"role": "user", "content": "explain hash tables"}]})
    assert isinstance(a, CachePlan) and isinstance(b, CachePlan)
    assert isinstance(other_system, CachePlan)
    assert a.exact != b.exact and a.partition == b.partition != other_system.partition
    assert a.text == "what is a hash table"


def test_an_image_or_n_above_one_leaves_only_the_exact_layer() -> None:
    conf = {"layers": ["exact", "semantic"], "semantic": {}}
    image = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": "data:,"}}]}]}
    found, several = _plan(conf, image), _plan(conf, _chat("hi", n=2))
    assert isinstance(found, CachePlan) and found.partition is None
    assert isinstance(several, CachePlan) and several.partition is None


def test_client_headers_bypass_refresh_or_bound_the_age() -> None:
    assert client_control({"Cache-Control": "no-store"}).status == BYPASS
    refresh = client_control({"cache-control": "no-cache"})
    assert refresh.status == REFRESH and not refresh.read and refresh.write
    assert client_control({"Cache-Control": "max-age=0"}).status == REFRESH
    assert client_control({"Cache-Control": "public, max-age=60"}).max_age == 60
    rule = [BypassRule(header="X-Cache-Bypass", equals="1")]
    assert client_control({"x-cache-bypass": "1"}, rule).status == BYPASS
    assert client_control({"X-Cache-Bypass": "0"}, rule).status is None
    assert _plan({"bypass_on": [{"header": "X-Cache-Bypass", "equals": "1"}]}, _chat("hi"),
                 headers={"X-Cache-Bypass": "1"}) == Bypass("client")


def test_a_request_above_the_temperature_cap_bypasses() -> None:
    assert _plan({"max_temperature": 0.5}, _chat("hi", temperature=0.7)) == Bypass("temperature")
    assert isinstance(_plan({"max_temperature": 0.5}, _chat("hi", temperature=0.2)), CachePlan)


def test_only_complete_answers_are_stored() -> None:
    ok = {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]}
    assert policy.answer_refusal(ok, 10, 100) is None
    assert policy.answer_refusal(ok, 101, 100) == "too_large"
    assert policy.answer_refusal({"error": {"message": "x"}}, 10, 100) == "error"
    filtered = {"choices": [{"message": {}, "finish_reason": "content_filter"}]}
    assert policy.answer_refusal(filtered, 10, 100) == "content_filter"
    cut = {"choices": [{"message": {"content": "x"}, "finish_reason": None}]}
    assert policy.answer_refusal(cut, 10, 100) == "incomplete"
    tools = {"choices": [{"message": {"tool_calls": [{"id": "1"}]},
                          "finish_reason": "tool_calls"}]}
    assert policy.is_exact_only({}, tools) and policy.is_exact_only({"n": 2}, ok)
    assert not policy.is_exact_only({"n": 1}, ok)


def test_purge_patterns_name_a_route_a_consumer_both_or_all() -> None:
    assert keys.purge_pattern("ai-cache", route="r1") == "ai-cache:?:route=r1:*"
    assert keys.purge_pattern("ai-cache", consumer="bob") == "ai-cache:?:*consumer=bob:*"
    assert keys.purge_pattern("ai-cache") == "ai-cache:?:*"
