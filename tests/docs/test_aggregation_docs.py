"""Every `balancer.aggregation` the gateway accepts has a row in the semantic-routing
table of both languages."""

from __future__ import annotations

from pathlib import Path

import pytest

from semproxy.semantic.similarity import AGGREGATIONS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("page", ["docs/en/semantic-routing.md", "docs/zh/semantic-routing.md"])
def test_the_aggregation_table_lists_every_aggregation(page: str) -> None:
    rows = [line for line in (ROOT / page).read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")]
    listed = {row.split("`")[1] for row in rows}
    assert set(AGGREGATIONS) <= listed
