"""The quickstart gateway with its admin listener on loopback port 0, for playground tests."""

from __future__ import annotations

from pathlib import Path

from semproxy.admin.run import RunningGateway, start
from semproxy.config.loader import load_file
from semproxy.config.source import FileSource

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"
ADMIN_KEY = "playground-test-key"
LABELLED = (
    '{"prompt": "write a python function", "instance": "code"}\n'
    '{"prompt": "please debug this stack trace", "instance": "code"}\n'
    '{"prompt": "translate this sentence into french", "instance": "translate"}\n'
    '{"messages": [{"role": "user", "content": "what is the weather"}], "instance": null}\n'
)


def quickstart_file(directory: Path) -> Path:
    """The quickstart config, comments kept, with a fixed key and free ports."""
    text = QUICKSTART.read_text(encoding="utf-8")
    text = text.replace("127.0.0.1:9180", "127.0.0.1:0").replace("127.0.0.1:9080", "127.0.0.1:0")
    text = text.replace("${SEMPROXY_ADMIN_KEY:-quickstart-admin-key}", ADMIN_KEY)
    path = directory / "quickstart.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def start_playground(directory: Path) -> RunningGateway:
    path = quickstart_file(directory)
    return await start(load_file(path), "127.0.0.1:0", source=FileSource(path))
