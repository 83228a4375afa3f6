"""APISIX cost_expr: parsed by a whitelist grammar (never eval), evaluated as APISIX does,
bounded by interval arithmetic for the hold, and refused at its config path when not."""

from __future__ import annotations

import pytest
from tests.governance.plans import document
from tests.governance.test_config import P, errors

from semproxy.governance.cost_expr import CostExprError, compile_cost
from semproxy.types import Usage


@pytest.mark.parametrize(("text", "value"), [
    ("input_tokens + output_tokens", 150),
    ("prompt_tokens + 2 * completion_tokens", 200),
    ("(input_tokens - cached_tokens) + cached_tokens / 4 + output_tokens", 135),
    ("max(input_tokens, output_tokens) + min(1, 2) + abs(-3) + ceil(0.2) + floor(1.9)", 106),
    ("math.max(input_tokens - 1000, 0)", 0),  # negative parts clamp at 0 as in APISIX
    ("2 ^ 3 ^ 2 / 64", 8),  # ^ is right-associative: 2^(3^2) = 512
    ("-2 ^ 2 + 10", 6),  # unary minus binds looser than ^: -(2^2)
    ("output_tokens % 7 + 0x10", 17),
    ("output_tokens / 3", 17),  # 16.67 rounded half up
])
def test_values_are_what_apisix_computes(text: str, value: int) -> None:
    assert compile_cost(text).evaluate(Usage(100, 50, cached_input=20)) == value


def test_raw_usage_fields_win_and_nested_ones_are_found() -> None:
    expr = compile_cost("input_tokens + cache_creation_input_tokens + output_tokens "
                        "+ prompt_tokens_details.cached_tokens")
    raw = {"input_tokens": 10, "cache_creation_input_tokens": 300, "output_tokens": 5,
           "prompt_tokens_details": {"cached_tokens": 7}}
    assert expr.evaluate(Usage(999, 999), raw) == 322
    assert compile_cost("reasoning_tokens").evaluate(
        Usage(), {"output_tokens_details": {"reasoning_tokens": 40}}) == 40


def test_the_hold_is_an_upper_bound_of_every_answer_within_the_bounds() -> None:
    expr = compile_cost("max(input_tokens - 2 * cached_tokens, 0) + 3 * output_tokens - 5")
    assert expr.upper(1000, 200) == 1000 + 600 - 5
    for used in (Usage(1000, 200), Usage(0, 0), Usage(1000, 200, cached_input=1000)):
        assert (expr.evaluate(used) or 0) <= expr.upper(1000, 200)


@pytest.mark.parametrize(("text", "why"), [
    ("input_tokens / output_tokens", "unbounded"),
    ("2 ^ output_tokens", "unbounded"),
    ("input_tokens > 100 and 1 or 2", "unexpected"),
    ("os.execute(1)", "not an allowed function"),
    ("__import__", "not a token count"),
    ("web_search_requests", "not a token count"),
    ("'a' .. 'b'", "unexpected"),
    ("(" * 40 + "1" + ")" * 40, "nested"),
    ("1 +", "ends too early"),
])
def test_what_cannot_be_evaluated_or_bounded_is_refused(text: str, why: str) -> None:
    with pytest.raises(CostExprError, match=why):
        compile_cost(text)


def test_the_config_names_the_path_of_a_bad_expression() -> None:
    bad = {"limit_strategy": "expression", "limit": 100, "time_window": 60,
           "cost_expr": "input_tokens / output_tokens"}
    assert any(e.startswith(f"{P}.cost_expr: its worst case is unbounded")
               for e in errors(document(bad)))
    missing = {"limit_strategy": "expression", "limit": 100, "time_window": 60}
    assert f"{P}.cost_expr: required when limit_strategy is expression" in errors(
        document(missing))
