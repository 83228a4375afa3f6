"""The playground page in a real headless Chromium, driven by selenium.

Skipped when selenium, /usr/bin/chromium or /usr/bin/chromedriver is missing
(`.ci/run` installs them). Each test runs its browser steps in a worker
thread, because selenium blocks and the gateway serves on this event loop.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from tests.server.playground_env import ADMIN_KEY, LABELLED, quickstart_file, start_playground

from semproxy.admin.run import RunningGateway, start
from semproxy.config.loader import load_file
from semproxy.config.source import FileSource

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1100,900")

pytestmark = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="needs chromium and chromedriver (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory(prefix="semproxy-chromium-") as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture
async def gw(tmp_path: Path) -> Any:
    running = await start_playground(tmp_path)
    yield running
    await running.close()


def wait(driver: WebDriver, condition: Callable[[WebDriver], Any], seconds: float = 10) -> Any:
    return WebDriverWait(driver, seconds).until(condition)


def open_with_key(driver: WebDriver, gw: RunningGateway) -> None:
    driver.get(f"{gw.admin_url}/ui/")
    driver.find_element(By.ID, "key").send_keys(ADMIN_KEY)
    driver.find_element(By.ID, "key-save").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#route option[value=auto]"))


def prompt_tab(driver: WebDriver, gw: RunningGateway) -> dict[str, Any]:
    open_with_key(driver, gw)
    driver.find_element(By.ID, "prompt").send_keys("please debug this python stack trace")
    wait(driver, lambda d: d.find_element(By.ID, "pick").text == "code")
    bars = driver.find_elements(By.CSS_SELECTOR, "#bars rect.bar")
    return {
        "bars": {b.get_attribute("data-instance"): float(b.get_attribute("data-score") or 0)
                 for b in bars},
        "picked": [b.get_attribute("data-instance")
                   for b in driver.find_elements(By.CSS_SELECTOR, "#bars rect.pick")],
        "thresholds": [t.get_attribute("data-threshold")
                       for t in driver.find_elements(By.CSS_SELECTOR, "#bars .threshold")],
        "reason": driver.find_element(By.ID, "reason").text,
        "margin": float(driver.find_element(By.ID, "margin").text),
        "url": driver.current_url,
        "stored": driver.execute_script("return sessionStorage.getItem('semproxy-admin-key')"),
    }


async def test_prompt_tab_draws_a_bar_per_instance_and_names_the_pick(
    browser: WebDriver, gw: RunningGateway
) -> None:
    seen = await asyncio.to_thread(prompt_tab, browser, gw)
    assert set(seen["bars"]) == {"code", "translate"}
    assert seen["bars"]["code"] > 0.3 > seen["bars"]["translate"]
    assert seen["picked"] == ["code"]
    assert seen["thresholds"] == ["0.3", "0.3"]
    assert seen["reason"] == "matched"
    assert seen["margin"] > 0
    assert ADMIN_KEY not in seen["url"]
    assert seen["stored"] == ADMIN_KEY


def batch_tab(driver: WebDriver, gw: RunningGateway, upload: Path) -> dict[str, Any]:
    open_with_key(driver, gw)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=batch]").click()
    driver.find_element(By.ID, "batch-file").send_keys(str(upload))
    wait(driver, lambda d: d.find_element(By.ID, "batch-text").get_attribute("value"))
    driver.find_element(By.ID, "eval-btn").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#confusion td"))
    matrix = [[c.text for c in row.find_elements(By.CSS_SELECTOR, "th, td")]
              for row in driver.find_elements(By.CSS_SELECTOR, "#confusion tr")]
    driver.find_element(By.ID, "calibrate-btn").click()
    wait(driver, lambda d: d.find_element(By.ID, "calibrate-out").is_displayed())
    # A route the validation refuses: the page must show the error paths.
    driver.execute_script("state.proposal.threshold = 'high';")
    driver.find_element(By.ID, "apply").click()
    wait(driver, lambda d: d.switch_to.alert).accept()
    wait(driver, lambda d: "Rejected" in d.find_element(By.ID, "apply-result").text)
    rejected = driver.find_element(By.ID, "apply-result").text
    driver.find_element(By.ID, "calibrate-btn").click()
    wait(driver, lambda d: d.find_element(By.ID, "apply-result").text == "")
    driver.find_element(By.ID, "apply").click()
    wait(driver, lambda d: d.switch_to.alert).accept()
    wait(driver, lambda d: "Applied" in d.find_element(By.ID, "apply-result").text)
    return {"matrix": matrix, "rejected": rejected,
            "threshold": driver.execute_script("return state.proposal.threshold")}


async def test_batch_tab_shows_the_confusion_matrix_and_applies_through_validation(
    browser: WebDriver, gw: RunningGateway, tmp_path: Path
) -> None:
    upload = tmp_path / "labelled.jsonl"
    upload.write_text(LABELLED, encoding="utf-8")
    seen = await asyncio.to_thread(batch_tab, browser, gw, upload)
    assert seen["matrix"] == [["expected \\ picked", "code", "translate", "default"],
                              ["code", "2", "0", "0"],
                              ["translate", "0", "1", "0"],
                              ["default", "0", "0", "1"]]
    assert "threshold" in seen["rejected"]
    spec = gw.gateway.config.routes[0].semantic
    assert spec is not None and spec.threshold == seen["threshold"]
    # Applied to the file in place: the operator's comments are still there.
    assert (tmp_path / "quickstart.yaml").read_text().startswith("# The embedded default")


def live_tab(driver: WebDriver, gw: RunningGateway) -> list[list[str]]:
    open_with_key(driver, gw)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=live]").click()
    wait(driver, lambda d: "connected:" in d.find_element(By.ID, "live-status").text)
    for text in ("write a python function", "translate this sentence into french"):
        request = urllib.request.Request(
            f"{gw.url}/v1/chat/completions", headers={"Content-Type": "application/json"},
            data=orjson.dumps({"messages": [{"role": "user", "content": text}]}))
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert resp.status == 200
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#live-table tbody tr")) == 2)
    rows = [[c.text for c in row.find_elements(By.TAG_NAME, "td")]
            for row in driver.find_elements(By.CSS_SELECTOR, "#live-table tbody tr")]
    driver.find_element(By.CSS_SELECTOR, "[data-tab=prompt]").click()  # closes the stream
    return rows


async def test_live_tab_streams_new_decisions_newest_first(
    browser: WebDriver, gw: RunningGateway
) -> None:
    rows = await asyncio.to_thread(live_tab, browser, gw)
    assert [(r[1], r[2], r[4], r[6]) for r in rows] == [
        ("auto", "translate", "200", "matched"), ("auto", "code", "200", "matched")]


NEW = "tune my bicycle gears before the race"


def add_from_batch(driver: WebDriver, gw: RunningGateway, upload: Path) -> str:
    open_with_key(driver, gw)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=batch]").click()
    driver.find_element(By.ID, "batch-file").send_keys(str(upload))
    wait(driver, lambda d: d.find_element(By.ID, "batch-text").get_attribute("value"))
    driver.find_element(By.ID, "eval-btn").click()
    button = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#misses button.add-example"))
    label = button.text
    button.click()
    wait(driver, lambda d: "added to code" in d.find_element(
        By.CSS_SELECTOR, "#misses button.add-example").text)
    return str(label)


async def test_batch_tab_adds_a_misrouted_prompt_to_the_instance_it_was_meant_for(
    browser: WebDriver, gw: RunningGateway, tmp_path: Path
) -> None:
    upload = tmp_path / "labelled.jsonl"
    miss = orjson.dumps({"prompt": NEW, "instance": "code"}).decode()
    upload.write_text(LABELLED + miss + "\n", encoding="utf-8")
    label = await asyncio.to_thread(add_from_batch, browser, gw, upload)
    assert label == "add to code"
    code = gw.gateway.config.routes[0].instances[0]
    assert code.name == "code" and code.examples[-1] == NEW


@pytest.fixture
async def logged(tmp_path: Path) -> Any:
    """The quickstart gateway with prompts in its decision log (logging.payloads on)."""
    path = quickstart_file(tmp_path)
    text = path.read_text(encoding="utf-8")
    payloads = "        debug_headers: true\n        logging: {payloads: true}\n"
    path.write_text(text.replace("        debug_headers: true\n", payloads), encoding="utf-8")
    running = await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
    yield running
    await running.close()


def add_from_live(driver: WebDriver, gw: RunningGateway) -> str:
    open_with_key(driver, gw)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=live]").click()
    wait(driver, lambda d: "connected:" in d.find_element(By.ID, "live-status").text)
    request = urllib.request.Request(
        f"{gw.url}/v1/chat/completions", headers={"Content-Type": "application/json"},
        data=orjson.dumps({"messages": [{"role": "user", "content": NEW}]}))
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200
    select = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#live-table td.add select"))
    shown = Select(select).first_selected_option.text
    Select(select).select_by_value("code")
    driver.find_element(By.CSS_SELECTOR, "#live-table td.add button").click()
    wait(driver, lambda d: "added to code" in d.find_element(
        By.CSS_SELECTOR, "#live-table td.add button").text)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=prompt]").click()  # closes the stream
    return str(shown)


async def test_live_tab_adds_a_logged_prompt_as_an_example_of_the_chosen_instance(
    browser: WebDriver, logged: RunningGateway
) -> None:
    shown = await asyncio.to_thread(add_from_live, browser, logged)
    assert shown == "default"  # the select starts on the instance that served it
    code = logged.gateway.config.routes[0].instances[0]
    assert code.name == "code" and code.examples[-1] == NEW


def narrow_page(driver: WebDriver, gw: RunningGateway, upload: Path) -> dict[str, Any]:
    driver.set_window_size(420, 900)
    try:
        open_with_key(driver, gw)
        driver.find_element(By.ID, "prompt").send_keys("please debug this python stack trace")
        wait(driver, lambda d: d.find_element(By.ID, "pick").text == "code")
        overflow = {"prompt": page_overflow(driver)}
        driver.find_element(By.CSS_SELECTOR, "[data-tab=batch]").click()
        driver.find_element(By.ID, "batch-file").send_keys(str(upload))
        wait(driver, lambda d: d.find_element(By.ID, "batch-text").get_attribute("value"))
        driver.find_element(By.ID, "eval-btn").click()
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#confusion td"))
        overflow["batch"] = page_overflow(driver)
        driver.find_element(By.CSS_SELECTOR, "[data-tab=live]").click()
        overflow["live"] = page_overflow(driver)
        driver.find_element(By.CSS_SELECTOR, "[data-tab=prompt]").click()
        return overflow
    finally:
        driver.set_window_size(1100, 900)


def page_overflow(driver: WebDriver) -> dict[str, float]:
    """How far the page and the score chart reach past the window's width (0: they fit)."""
    result: dict[str, float] = driver.execute_script("""
        const width = document.documentElement.clientWidth;
        const chart = document.getElementById("bars").getBoundingClientRect();
        return {page: document.documentElement.scrollWidth - width,
                chart: Math.max(0, chart.right - width)};""")
    return result


async def test_at_420_px_neither_the_page_nor_the_score_chart_overflows(
    browser: WebDriver, gw: RunningGateway, tmp_path: Path
) -> None:
    upload = tmp_path / "labelled.jsonl"
    upload.write_text(LABELLED, encoding="utf-8")
    seen = await asyncio.to_thread(narrow_page, browser, gw, upload)
    assert seen == {tab: {"page": 0, "chart": 0} for tab in ("prompt", "batch", "live")}


def scores_after(driver: WebDriver, gw: RunningGateway, action: str) -> dict[str, Any]:
    open_with_key(driver, gw)
    driver.find_element(By.ID, "prompt").send_keys("please debug this python stack trace")
    wait(driver, lambda d: d.find_element(By.ID, "pick").text == "code")
    if action == "forget":
        driver.find_element(By.ID, "key-forget").click()
    else:
        driver.find_element(By.ID, "key").send_keys("a-wrong-key")
        driver.find_element(By.ID, "key-save").click()
        wait(driver, lambda d: "refused" in d.find_element(By.ID, "status").text)
    at_once = on_screen(driver)
    driver.find_element(By.ID, "prompt").send_keys(" again")  # and typing brings nothing back
    driver.execute_script("return new Promise((done) => setTimeout(done, 600));")
    return {"at_once": at_once, "after_typing": on_screen(driver)}


def on_screen(driver: WebDriver) -> dict[str, Any]:
    return {"pick": driver.find_element(By.ID, "pick").text,
            "bars": len(driver.find_elements(By.CSS_SELECTOR, "#bars rect.bar")),
            "routes": len(driver.find_elements(By.CSS_SELECTOR, "#route option"))}


@pytest.mark.parametrize("action", ["forget", "wrong_key"])
async def test_no_scores_stay_on_screen_after_forget_or_a_refused_key(
    browser: WebDriver, gw: RunningGateway, action: str
) -> None:
    seen = await asyncio.to_thread(scores_after, browser, gw, action)
    cleared = {"pick": "-", "bars": 0, "routes": 0}
    assert seen == {"at_once": cleared, "after_typing": cleared}


@pytest.fixture
async def shadow_gw(tmp_path: Path) -> Any:
    """The quickstart with its route's response cache in shadow mode."""
    path = quickstart_file(tmp_path)
    cache = "      ai-cache: {layers: [exact, semantic], mode: shadow}\n"
    text = path.read_text(encoding="utf-8").replace("    plugins:\n", "    plugins:\n" + cache)
    path.write_text(text, encoding="utf-8")
    running = await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
    yield running
    await running.close()


def cache_tab(driver: WebDriver, gw: RunningGateway) -> dict[str, Any]:
    open_with_key(driver, gw)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=cache]").click()
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#cache-records tbody tr"))
    row = driver.find_element(By.CSS_SELECTOR, "#cache-table tbody tr[data-route=auto]")
    records = driver.find_elements(By.CSS_SELECTOR, "#cache-records tbody tr")
    seen = {"row": [c.text for c in row.find_elements(By.TAG_NAME, "td")],
            "records": [[c.text for c in r.find_elements(By.TAG_NAME, "td")] for r in records]}
    driver.find_element(By.ID, "key-forget").click()
    seen["after_forget"] = len(driver.find_elements(By.CSS_SELECTOR, "#cache-table tbody tr"))
    return seen


async def test_cache_tab_shows_the_shadow_would_hit_rate_and_the_last_would_hits(
    browser: WebDriver, shadow_gw: RunningGateway
) -> None:
    async with aiohttp.ClientSession() as http:
        for text in ("what is the capital of chile", "what is the capital of chile",
                     "tell me the capital of chile", "write a python function"):
            async with http.post(f"{shadow_gw.url}/v1/chat/completions", json={
                    "messages": [{"role": "user", "content": text}]}) as resp:
                assert resp.status == 200 and resp.headers["X-AI-Cache-Status"] == "MISS"
            await shadow_gw.gateway.caches.drain()
    seen = await asyncio.to_thread(cache_tab, browser, shadow_gw)
    route, requests, would_hit, exact, semantic, _ = seen["row"]
    assert (route, requests, exact, semantic) == ("auto", "4", "1", "1")
    assert would_hit.startswith("50.0% (2/4, 95% CI")
    assert [r[2] for r in seen["records"]] == ["semantic", "exact"]  # newest first
    assert seen["after_forget"] == 0


def status_across_tabs(driver: WebDriver, gw: RunningGateway) -> dict[str, str]:
    open_with_key(driver, gw)
    connected = driver.find_element(By.ID, "status").text
    driver.find_element(By.CSS_SELECTOR, "[data-tab=batch]").click()
    driver.execute_script("arguments[0].value = arguments[1];",
                          driver.find_element(By.ID, "batch-text"), LABELLED)
    Select(driver.find_element(By.ID, "objective")).select_by_value("oos_recall=0.9")
    driver.find_element(By.ID, "calibrate-btn").click()
    wait(driver, lambda d: d.find_element(By.ID, "calibrate-out").is_displayed())
    done = driver.find_element(By.ID, "status").text
    driver.find_element(By.CSS_SELECTOR, "[data-tab=prompt]").click()
    return {"connected": connected, "done": done,
            "after": driver.find_element(By.ID, "status").text,
            "summary": driver.find_element(By.ID, "proposal-summary").text}


async def test_a_batch_outcome_leaves_the_status_line_when_another_tab_is_shown(
    browser: WebDriver, gw: RunningGateway,
) -> None:
    seen = await asyncio.to_thread(status_across_tabs, browser, gw)
    assert seen["done"] == "Done."
    assert seen["connected"].startswith("Connected.")
    assert seen["after"] == seen["connected"]


LONG = ("please review this function for thread safety and tell me whether the lock "
        "around the shared counter is held for too long when the queue is full")


def prompt_cell_width(driver: WebDriver, gw: RunningGateway) -> dict[str, Any]:
    open_with_key(driver, gw)
    driver.find_element(By.CSS_SELECTOR, "[data-tab=live]").click()
    wait(driver, lambda d: "connected:" in d.find_element(By.ID, "live-status").text)
    request = urllib.request.Request(
        f"{gw.url}/v1/chat/completions", headers={"Content-Type": "application/json"},
        data=orjson.dumps({"messages": [{"role": "user", "content": LONG}]}))
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200
    cell = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#live-table td.prompt"))
    wait(driver, lambda d: cell.text)
    seen = {"width": cell.rect["width"], "text": cell.text,
            "align": cell.value_of_css_property("text-align")}
    driver.find_element(By.CSS_SELECTOR, "[data-tab=prompt]").click()  # closes the stream
    return seen


async def test_a_logged_prompt_gets_a_readable_column(
    browser: WebDriver, logged: RunningGateway,
) -> None:
    seen = await asyncio.to_thread(prompt_cell_width, browser, logged)
    assert seen["text"] == LONG
    assert seen["width"] >= 280 and seen["align"] in ("left", "start")
