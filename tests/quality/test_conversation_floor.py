"""Floors on `context: conversation` over the held-out conversation files (needs CLINC150).

The route is the CLINC150 one the docs measure on (k=16, the converter's
defaults, `context: conversation` with the default knobs), run on the local
model. Each floor sits about two points under the figure measured when it was
set (docs/en/semantic-routing.md), counting only conversations whose labelled
turns route correctly alone, so a change that makes follow-ups drift or
switches stick fails here. When a change makes routing better, raise the floor.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from semproxy.config.loader import load_data
from semproxy.quality.clinc150 import convert
from semproxy.quality.conversations import load_conversations, rates, route_conversations
from semproxy.semantic.router import router_for

CLINC = Path(__file__).resolve().parents[2] / "../shared/data/clinc150_train_val.json"
DATA = Path(__file__).parent / "data/conversations"
pytestmark = pytest.mark.skipif(not CLINC.exists(), reason=f"CLINC150 data not found at {CLINC}")

# (file, rate key): floor. Measured 2026-12-02 with cue_margin 0.08: test 95.8% (161/168),
# 91.4% (170/186), 92.7% (230/248); test2 92.6% (151/163), 90.2% (212/235), 94.7%
# (180/190); test3 94.1% (144/153), 90.9% (159/175), 91.4% (159/174).
FLOORS = {
    ("test", ("followup", "2 alone-ok")): 0.93,
    ("test", ("followup", "3 alone-ok")): 0.89,
    ("test", ("switch", "all alone-ok")): 0.90,
    ("test2", ("followup", "2 alone-ok")): 0.90,
    ("test2", ("followup", "3 alone-ok")): 0.88,
    ("test2", ("switch", "all alone-ok")): 0.92,
    ("test3", ("followup", "2 alone-ok")): 0.92,
    ("test3", ("followup", "3 alone-ok")): 0.88,
    ("test3", ("switch", "all alone-ok")): 0.89,
}


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clinc")
    path, _ = convert(CLINC, out, k=16)
    return path


@pytest.mark.parametrize("name", ["test", "test2", "test3"])
async def test_conversation_context_stays_above_the_floor(config_path: Path, name: str) -> None:
    raw = yaml.safe_load(config_path.read_text())
    raw["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]["context"] = "conversation"
    config = load_data(raw)
    async with router_for(config, config.routes[0].id) as router:
        table = rates(await route_conversations(router, load_conversations(DATA / f"{name}.jsonl")))
    for (split, key), floor in FLOORS.items():
        if split == name:
            rate = table[key]
            assert rate.n >= 140 and rate.value is not None and rate.value >= floor, \
                f"{name} {key}: {rate.text()} under the floor {floor:.0%}"
