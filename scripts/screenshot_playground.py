"""Take docs/img/playground.png from the real page: the quickstart gateway, the Prompt tab.

    .venv/bin/python scripts/screenshot_playground.py [--out docs/img/playground.png]

Starts the quickstart config (echo providers, the in-process embedding model, no
keys) on free loopback ports with its admin listener, opens /ui/ in headless
Chromium (as tests/server/test_playground_browser.py does), types a two-message
prompt and saves the page from the top to the chart's legend. Needs chromium, chromedriver and selenium.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import shutil
import sys
import tempfile
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from semproxy.admin.run import RunningGateway, start  # noqa: E402
from semproxy.config.loader import load_file  # noqa: E402
from semproxy.config.source import FileSource  # noqa: E402

KEY = "screenshot-admin-key"
PROMPT = ('[{"role": "system", "content": "You are terse."}, {"role": "user", '
          '"content": "rewrite this sql query error message in plain english"}]')
WIDTH = 900


def quickstart(directory: Path) -> Path:
    text = (ROOT / "examples/quickstart.yaml").read_text(encoding="utf-8")
    text = text.replace("${SEMPROXY_ADMIN_LISTEN:-127.0.0.1:9180}", "127.0.0.1:0")
    text = text.replace("127.0.0.1:9080", "127.0.0.1:0")
    text = text.replace("${SEMPROXY_ADMIN_KEY:-quickstart-admin-key}", KEY)
    path = directory / "quickstart.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def shoot(admin_url: str, out: Path) -> None:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--window-size={WIDTH},900"):
        options.add_argument(flag)
    service = webdriver.ChromeService(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.get(f"{admin_url}/ui/")
        driver.find_element(By.ID, "key").send_keys(KEY)
        driver.find_element(By.ID, "key-save").click()
        wait = WebDriverWait(driver, 20)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#route option[value=auto]"))
        driver.find_element(By.ID, "prompt").send_keys(PROMPT)
        wait.until(lambda d: d.find_element(By.ID, "pick").text not in ("", "-"))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#bars rect.bar"))
        driver.execute_script("document.activeElement.blur();")
        # Down to the legend under the chart, whatever the window's own frame takes.
        bottom = driver.execute_script(
            "return document.querySelector('.legend').getBoundingClientRect().bottom;")
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"clip": {
            "x": 0, "y": 0, "width": WIDTH, "height": int(bottom) + 16, "scale": 1}})
        out.write_bytes(base64.b64decode(shot["data"]))
    finally:
        driver.quit()


async def main(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="semproxy-shot-") as tmp:
        path = quickstart(Path(tmp))
        running: RunningGateway = await start(load_file(path), "127.0.0.1:0",
                                              source=FileSource(path))
        try:
            assert running.admin_url is not None
            await asyncio.to_thread(shoot, running.admin_url, out)
        finally:
            await running.close()
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs/img/playground.png")
    asyncio.run(main(parser.parse_args().out))
