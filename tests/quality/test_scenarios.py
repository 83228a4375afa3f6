"""The hand-written scenario sets: their shape, and floors on how well the local model routes them.

The floors sit about two points (four prompts) under the figures measured when
they were set (`scripts/scenario_figures.py`), so a change that makes routing
worse on these realistic prompts fails here instead of passing silently. When a
change makes routing better, raise the floor with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from semproxy.quality.scenarios import (
    KINDS,
    Rate,
    evaluate_scenario,
    figures,
    find_scenarios,
    load_scenario,
)

DATA = Path(__file__).parent / "data"

# name: (accuracy with the config's thresholds, in-scope top-1 ignoring thresholds).
# Measured 2026-12-02 with the default local model: 70.3% / 88.5% (cost_routing),
# 70.5% / 83.4% (support_domains), 68.4% / 100% (compliance; one specialist, so
# top-1 is always right and only the threshold decides).
FLOORS = {
    "cost_routing": (0.68, 0.86),
    "support_domains": (0.68, 0.81),
    "compliance": (0.66, 1.0),
}


def test_every_scenario_folder_has_a_floor() -> None:
    assert [p.name for p in find_scenarios(DATA)] == sorted(FLOORS)


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_scenario_is_large_and_written_like_a_user_would(name: str) -> None:
    scenario = load_scenario(DATA / name)
    assert len(scenario.items) >= 200
    route = scenario.config.routes[0]
    specialists = [i for i in route.instances if i.examples]
    assert specialists and all(len(i.examples or ()) == 5 for i in specialists)
    assert {k for k in scenario.kinds} == set(KINDS)
    assert any(item.instance is None for item in scenario.items)
    texts = [item.text.lower() for item in scenario.items]
    examples = {e.lower() for i in specialists for e in i.examples or ()}
    assert len(set(texts)) == len(texts) and not examples & set(texts)


@pytest.mark.parametrize("name", sorted(FLOORS))
async def test_local_model_stays_above_the_floor(name: str) -> None:
    scenario = load_scenario(DATA / name)
    result = figures(name, await evaluate_scenario(scenario), scenario.kinds)
    accuracy_floor, top1_floor = FLOORS[name]
    assert result.accuracy.value is not None and result.accuracy.value >= accuracy_floor, \
        result.accuracy.text()
    assert result.top1.value is not None and result.top1.value >= top1_floor, result.top1.text()


def test_wilson_interval_matches_hand_computed_values() -> None:
    # 5 of 10: centre stays 0.5, half-width 1.96*sqrt(0.025+0.0096)/1.384 = 0.2634.
    low, high = Rate(5, 10).interval()
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    # 0 of 20 is not the point [0, 0]: the upper end is z^2/(n+z^2) = 0.1611.
    low, high = Rate(0, 20).interval()
    assert low == 0.0 and round(high, 4) == 0.1611
    assert Rate(0, 0).value is None and Rate(0, 0).interval() == (0.0, 1.0)
    assert Rate(3, 4).text() == " 75.0% [30.1,  95.4] n=4"
