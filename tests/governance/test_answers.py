"""The 429 answer and the rate-limit headers per client protocol (pure functions)."""

from __future__ import annotations

from semproxy.governance.answers import duration, limit_headers, refusal_answer
from semproxy.governance.model import Limit, Scope, Unit
from semproxy.governance.reservation import Reading, refusal_for
from semproxy.governance.windows import Window

NOW = 1_800_000_000.0


def limit(unit: Unit, amount: int, **kw: object) -> Limit:
    return Limit(id="x", scope=Scope.CONSUMER, unit=unit, amount=amount, window=Window(60),
                 store="memory", label=str(kw.pop("label", "tpm")), **kw)  # type: ignore[arg-type]


def test_a_rate_limit_is_rate_limit_exceeded_for_openai_and_rate_limit_error_for_anthropic(
) -> None:
    refusal = refusal_for(limit(Unit.TOTAL_TOKENS, 1000), 12, 7.2)
    openai = refusal_answer(refusal, "chat")
    assert (openai.status, openai.type, openai.code) == (429, "tokens", "rate_limit_exceeded")
    assert ("Retry-After", "8") in openai.headers and ("retry-after-ms", "7200") in openai.headers
    claude = refusal_answer(refusal, "messages")
    assert (claude.status, claude.type, claude.code) == (429, "rate_limit_error", None)
    assert claude.headers == [("Retry-After", "8")]


def test_a_spent_budget_is_insufficient_quota_and_tells_sdks_not_to_retry() -> None:
    refusal = refusal_for(limit(Unit.MONEY, 10**9), 0, 86400 * 3)
    answer = refusal_answer(refusal, "responses")
    assert (answer.type, answer.code) == ("insufficient_quota", "insufficient_quota")
    assert ("x-should-retry", "false") in answer.headers


def test_apisix_rejected_code_and_msg_are_kept() -> None:
    apisix = limit(Unit.TOTAL_TOKENS, 300, apisix=True, rejected_code=503,
                   rejected_msg="quota used")
    answer = refusal_answer(refusal_for(apisix, 0, 3), "chat")
    assert (answer.status, answer.message) == (503, "quota used")


def test_openai_headers_report_the_tightest_limit_of_each_family() -> None:
    readings = [Reading(limit(Unit.REQUESTS, 60), 59, 30.0),
                Reading(limit(Unit.TOTAL_TOKENS, 1000), 400, 0.5),
                Reading(limit(Unit.OUTPUT_TOKENS, 500), 100, 75.0)]
    assert limit_headers(readings, "chat", NOW) == [
        ("x-ratelimit-limit-requests", "60"), ("x-ratelimit-remaining-requests", "59"),
        ("x-ratelimit-reset-requests", "30s"),
        ("x-ratelimit-limit-tokens", "500"), ("x-ratelimit-remaining-tokens", "100"),
        ("x-ratelimit-reset-tokens", "1m15s")]


def test_anthropic_headers_name_input_and_output_tokens_and_reset_as_a_time() -> None:
    readings = [Reading(limit(Unit.INPUT_TOKENS, 1000), 10, 59.5)]
    assert limit_headers(readings, "messages", NOW) == [
        ("anthropic-ratelimit-input-tokens-limit", "1000"),
        ("anthropic-ratelimit-input-tokens-remaining", "10"),
        ("anthropic-ratelimit-input-tokens-reset", "2027-01-15T08:01:00Z")]


def test_apisix_quota_headers_carry_the_instance_name_or_the_rule_prefix() -> None:
    inst = limit(Unit.TOTAL_TOKENS, 300, apisix=True, quota_headers=True, label="gpt",
                 instance="gpt")
    rule = limit(Unit.TOTAL_TOKENS, 50, apisix=True, quota_headers=True, label="team",
                 key="$consumer_name")
    hidden = limit(Unit.TOTAL_TOKENS, 50, apisix=True, quota_headers=False)
    headers = limit_headers([Reading(inst, 120, 12.345, "gpt"), Reading(rule, 0, 3.0),
                             Reading(hidden, 1, 1.0)], "chat", NOW)
    assert headers == [("X-AI-RateLimit-Limit-gpt", "300"), ("X-AI-RateLimit-Remaining-gpt", "120"),
                       ("X-AI-RateLimit-Reset-gpt", "12.34"), ("X-AI-team-RateLimit-Limit", "50"),
                       ("X-AI-team-RateLimit-Remaining", "0"), ("X-AI-team-RateLimit-Reset", "3")]


def test_duration_format() -> None:
    assert [duration(s) for s in (0.02, 1, 59.2, 360, 3723)] == ["20ms", "1s", "1m0s", "6m0s",
                                                                 "1h2m3s"]
