"""deploy.md's container example must leave the admin listener (and the playground)
reachable from the host: 127.0.0.1 inside a container is the container's own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from semproxy.config.loader import load_file

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"


def docker_run(page: str) -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    match = re.search(r"^docker run .*?semproxy:\S+$", text, re.MULTILINE | re.DOTALL)
    assert match, f"{page}: no docker run example"
    return match.group(0).replace("\\\n", " ")


@pytest.mark.parametrize("page", ["docs/en/deploy.md", "docs/zh/deploy.md"])
def test_the_docker_example_publishes_an_admin_listener_that_listens_beyond_loopback(
    page: str,
) -> None:
    command = docker_run(page)
    published = re.search(r"-p (?:127\.0\.0\.1:)?9180:9180", command)
    listen = re.search(r"-e SEMPROXY_ADMIN_LISTEN=(\S+)", command)
    assert published and listen, command
    env = {"SEMPROXY_ADMIN_LISTEN": listen.group(1), "SEMPROXY_ADMIN_KEY": "k" * 32}
    config = load_file(QUICKSTART, env)
    assert config.admin is not None and config.admin.listen == "0.0.0.0:9180"
    assert "SEMPROXY_ADMIN_KEY" in command  # never the well-known quickstart key


def test_the_quickstart_admin_stays_on_loopback_by_default() -> None:
    config = load_file(QUICKSTART, {})
    assert config.admin is not None and config.admin.listen == "127.0.0.1:9180"
