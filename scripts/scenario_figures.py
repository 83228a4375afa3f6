"""Print the routing figures of the hand-written scenario sets, each with n and a 95% interval.

    PYTHONPATH=src python scripts/scenario_figures.py [tests/quality/data]

Runs every scenario folder (config.yaml + prompts.jsonl) with the config as
written: the local model, its thresholds, no LLM call. The CI floors in
tests/quality/test_scenarios.py sit a little below these figures.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from semproxy.quality.scenarios import (
    evaluate_scenario,
    figures,
    find_scenarios,
    load_scenario,
    render_figures,
)

DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "tests/quality/data"


async def main(root: Path) -> int:
    folders = find_scenarios(root)
    if not folders:
        print(f"no scenario folders under {root}", file=sys.stderr)
        return 1
    for folder in folders:
        scenario = load_scenario(folder)
        ev = await evaluate_scenario(scenario)
        print(render_figures(figures(scenario.name, ev, scenario.kinds)))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ROOT)))
