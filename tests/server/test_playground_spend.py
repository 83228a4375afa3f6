"""The playground's Spend tab in headless Chromium: a chart over time read from the ledger,
the period and dimension selectors, and a consumer's remaining allowances.

Skipped like the other browser tests when selenium, chromium or chromedriver is missing.
The page's data calls are the admin API's (tests/ops/test_admin_spend.py tests them
alone); here the page must draw what they answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.governance.plans import Clock
from tests.ops.test_admin_limits import CONFIG
from tests.server.test_playground_browser import browser, pytestmark, wait

from semproxy.admin.run import RunningGateway, start
from semproxy.config.source import FileSource
from semproxy.governance.governor import Governor, RequestFacts
from semproxy.governance.governor_stores import StoreSet
from semproxy.types import Usage

pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

ADMIN_KEY = "admin-test-key-123"  # CONFIG's
__all__ = ["browser", "pytestmark"]


@pytest.fixture
async def gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    path = tmp_path / "semproxy.yaml"
    path.write_text(CONFIG.replace("{sqlite}", str(tmp_path / "spend.db")), encoding="utf-8")
    source = FileSource(path, interval_s=0.05)
    running = await start(await source.load(), "127.0.0.1:0", source=source)
    yield running
    await running.close()


async def answered(gw: RunningGateway, who: list[tuple[str, float]]) -> None:
    plan = gw.gateway.config.governance
    assert plan is not None
    clock = Clock()
    gov = Governor(plan, StoreSet.for_plan(plan), clock)
    for consumer, at in who:
        clock.now = at
        res = await gov.reserve(RequestFacts("chat", consumer=consumer, input_tokens=1000,
                                             max_tokens=500))
        await gov.commit(res, Usage(1000, 500), "big")
    await gov.stores.close()


def spend_tab(driver: WebDriver, gw: RunningGateway) -> dict[str, Any]:
    driver.get(f"{gw.admin_url}/ui/")
    driver.find_element(By.ID, "key").send_keys(ADMIN_KEY)
    driver.find_element(By.ID, "key-save").click()
    wait(driver, lambda d: "Connected" in d.find_element(By.ID, "status").text)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=spend]").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#spend-chart rect.spend-bar"))

    def bars() -> dict[str, float]:
        out: dict[str, float] = {}
        for bar in driver.find_elements(By.CSS_SELECTOR, "#spend-chart rect.spend-bar"):
            key = bar.get_attribute("data-key") or ""
            out[key] = out.get(key, 0.0) + float(bar.get_attribute("data-value") or 0)
        return out

    seen: dict[str, Any] = {"hours": bars(), "steps": [
        o.text for o in Select(driver.find_element(By.ID, "spend-step")).options]}
    seen["legend"] = [k.get_attribute("data-key")
                      for k in driver.find_elements(By.CSS_SELECTOR, "#spend-legend .key")]
    seen["totals"] = [[c.text for c in row.find_elements(By.CSS_SELECTOR, "th, td")]
                      for row in driver.find_elements(By.CSS_SELECTOR, "#spend-table tr")]
    Select(driver.find_element(By.ID, "spend-measure")).select_by_value("requests")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#spend-chart rect.spend-bar"))
    seen["requests"] = bars()
    Select(driver.find_element(By.ID, "spend-by")).select_by_value("route")
    wait(driver, lambda d: "route" in d.find_element(By.ID, "spend-status").text
         and set(bars()) == {"chat"})
    seen["routes"] = bars()
    Select(driver.find_element(By.ID, "spend-step")).select_by_value("day")
    wait(driver, lambda d: "30 days" in d.find_element(By.ID, "spend-status").text)
    seen["days"] = bars()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#allowance-table progress"))
    seen["consumers"] = [o.get_attribute("value") for o in
                         Select(driver.find_element(By.ID, "spend-consumer")).options]
    row = driver.find_element(By.CSS_SELECTOR, "#allowance-table tr:nth-child(2)")
    seen["allowance"] = [c.text for c in row.find_elements(By.CSS_SELECTOR, "td")]
    bar = driver.find_element(By.CSS_SELECTOR, "#allowance-table progress")
    seen["progress"] = (float(bar.get_attribute("value") or 0),
                        float(bar.get_attribute("max") or 0))
    driver.find_element(By.ID, "key-forget").click()
    seen["after_forget"] = len(driver.find_elements(By.CSS_SELECTOR, "#spend-chart rect"))
    return seen


async def test_the_spend_tab_charts_the_ledger_and_shows_what_is_left(
        browser: WebDriver, gw: RunningGateway) -> None:
    now = time.time()
    two_days = now - 2 * 86400
    # one writer per moment, as one worker would be (a worker does not sleep two days
    # between answers; a lease it stops syncing would count as used)
    await answered(gw, [("alice", two_days)])
    await answered(gw, [("alice", now), ("alice", now), ("bob", now)])
    seen = await asyncio.to_thread(spend_tab, browser, gw)
    # the last 24 hours, per consumer, in money: 2 x 0.0075 for alice, 0.0075 for bob
    assert seen["hours"] == pytest.approx({"alice": 0.015, "bob": 0.0075})
    assert seen["legend"] == ["alice", "bob"]
    assert seen["steps"] == ["last 60 minutes", "last 24 hours", "last 30 days",
                             "last 12 weeks", "last 12 months"]
    assert seen["totals"][1] == ["alice", "2", "2,000", "1,000", "0", "0.015"]
    assert seen["requests"] == {"alice": 2, "bob": 1}
    assert seen["routes"] == {"chat": 3}
    assert seen["days"] == {"chat": 4}  # the request two days ago is in the 30-day window
    assert seen["consumers"] == ["alice", "bob"]
    _, owner, window, used, of, left = seen["allowance"][:6]
    assert (owner, window, of) == ("consumer_group team-a", "calendar month (UTC)", "500.00")
    month = 3 if time.gmtime(two_days).tm_mon == time.gmtime(now).tm_mon else 2
    assert used == f"{0.0075 * month:.4f}"  # alice's answers this month
    assert left == f"{500 - 0.0075 * month:.4f}"
    assert seen["progress"] == pytest.approx((0.0075 * month, 500.0))
    assert seen["after_forget"] == 0
