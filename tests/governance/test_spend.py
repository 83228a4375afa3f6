"""Reading spend and allowances, and the `semproxy spend` command on a SQLite ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from tests.governance.plans import Clock, document, governor

from semproxy.cli import main
from semproxy.governance.governor import RequestFacts
from semproxy.governance.spend import allowances, spend
from semproxy.types import Usage


def doc(tmp_path: Path) -> dict[str, object]:
    groups = [{"id": "team", "plugins": {"ai-rate-limiting": {
        "limits": [{"money": 1.0, "window": "month", "tiers": [0.75, 0.9]}]}}}]
    consumers = [{"username": "alice", "group_id": "team",
                  "plugins": {"key-auth": {"key": "alice-key-0123"}}}]
    return document(None, consumers=consumers, groups=groups,
                    governance={"sqlite_path": str(tmp_path / "spend.db")})


async def test_spend_and_remaining_allowance(tmp_path: Path) -> None:
    gov = governor(doc(tmp_path), Clock())
    res = await gov.reserve(RequestFacts("r", consumer="alice", input_tokens=1000,
                                         max_tokens=1000))
    await gov.commit(res, Usage(1000, 500, cached_input=400), "small")
    # 600 * 2 + 400 * 0.5 + 500 * 8 per million = 0.0054
    rows = await spend(gov, "consumer", "month")
    assert [(r.key, r.requests, r.cost) for r in rows] == [("alice", 1, 5_400_000)]
    [left] = await allowances(gov, "alice")
    assert (left.used, left.remaining) == (5_400_000, 994_600_000)
    await gov.stores.close()


def test_semproxy_spend_prints_the_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(doc(tmp_path)))
    assert main(["spend", str(path), "--by", "group", "--consumer", "alice"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].split()[:2] == ["group", "requests"]
    assert "0.00 of 1.00 used" in out
