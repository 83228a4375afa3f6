"""Which statuses fail over, per fallback_strategy (APISIX meaning) and fallback_http_statuses."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import instance, route_config

from semproxy.config.loader import load_data
from semproxy.config.spec import RetryPolicy


def policy(**plugin: Any) -> RetryPolicy:
    config = load_data(route_config([instance("a")], **plugin), {})
    return config.routes[0].retry


def test_no_strategy_retries_no_status() -> None:
    assert policy().statuses == frozenset()


def test_http_429_adds_only_429() -> None:
    assert policy(fallback_strategy="http_429").statuses == {429}


def test_http_5xx_adds_every_5xx() -> None:
    statuses = policy(fallback_strategy="http_5xx").statuses
    assert {500, 503, 599} <= statuses and 429 not in statuses and 499 not in statuses


@pytest.mark.parametrize("strategy", ["instance_health_and_rate_limiting", ["rate_limiting"]])
def test_the_health_strategy_adds_no_status(strategy: Any) -> None:
    assert policy(fallback_strategy=strategy).statuses == frozenset()


def test_a_list_combines_and_explicit_statuses_join() -> None:
    statuses = policy(fallback_strategy=["http_429", "rate_limiting"],
                      fallback_http_statuses=[401, 402]).statuses
    assert statuses == {401, 402, 429}


def test_limits_are_carried_through() -> None:
    p = policy(max_retries=2, retry_on_failure_within_ms=1500)
    assert (p.max_retries, p.within_ms) == (2, 1500)
