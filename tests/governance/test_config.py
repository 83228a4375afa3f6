"""Limits and prices in the config: APISIX's plugin pastes in, nonsense is refused by path."""

from __future__ import annotations

from typing import Any

import pytest
from tests.governance.plans import document, plan_of

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError

P = "routes[0].plugins.ai-rate-limiting"


def errors(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_data(doc)
    return info.value.errors


def test_the_apisix_plugin_pastes_in_with_its_defaults() -> None:
    plan = plan_of(document({"limit": 300, "time_window": 30, "limit_strategy": "prompt_tokens"}))
    limits = plan.routes["r"].instances["big"]
    assert [(x.unit.value, x.amount, x.window.seconds, x.rejected_code, x.quota_headers)
            for x in limits] == [("input_tokens", 300, 30, 503, True)]
    assert limits[0].deny_on_store_error  # allow_degradation defaults to false


def test_a_money_budget_on_a_route_without_prices_is_refused() -> None:
    assert errors(document({"limits": [{"money": 10, "window": "month"}]}, prices=False)) == [
        f"{P}.limits[0].money: a money budget needs prices: instance(s) big, small have no "
        "pricing"]


@pytest.mark.parametrize(("limiting", "path"), [
    ({"limits": [{"money": -1, "window": "month"}]}, f"{P}.limits[0].money"),
    ({"limits": [{"requests": 10, "total_tokens": 5, "window": 60}]}, f"{P}.limits[0]"),
    ({"limits": [{"requests": 10}]}, f"{P}.limits[0].window"),
    ({"limits": [{"requests": 10, "window": "fortnight"}]}, f"{P}.limits[0].window"),
    ({"limits": [{"concurrent": 3, "window": 60}]}, f"{P}.limits[0].window"),
    ({"limits": [{"requests": 5, "window": 60, "tiers": [0.5]}]}, f"{P}.limits[0].tiers"),
    ({"limit": 100}, f"{P}.time_window"),
    ({"limit": "$http_x_limit", "time_window": 60}, f"{P}.limit"),
    ({"rules": [{"key": "$remote_addr", "count": 5, "time_window": 60}], "limit": 5,
      "time_window": 5}, f"{P}.rules"),
    ({"policy": "redis", "limit": 5, "time_window": 5}, f"{P}.redis_host"),
    ({"instances": [{"name": "nope", "limit": 5, "time_window": 5}]}, f"{P}.instances[0].name"),
    ({"limit": 0, "time_window": 5}, f"{P}.limit"),
])
def test_nonsense_limits_are_refused_at_their_path(limiting: dict[str, Any], path: str) -> None:
    assert any(e.startswith(path) for e in errors(document(limiting))), errors(document(limiting))


def test_a_negative_price_is_refused_at_its_path() -> None:
    doc = document(None)
    doc["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]["pricing"]["output"] = -2
    assert any(e.startswith("routes[0].plugins.ai-proxy-multi.instances[0].pricing.output")
               for e in errors(doc))


def test_the_plan_settings_default_to_the_config_defaults() -> None:
    # governance/ imports no config, so the plan keeps its own copy of the defaults.
    from semproxy.config.limits import Governance
    from semproxy.config.limits_plan import settings
    from semproxy.governance.plan import PlanSettings

    assert settings(Governance()) == PlanSettings()
