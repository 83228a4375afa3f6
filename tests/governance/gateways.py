"""Gateway processes for the proofs: `semproxy serve` (one worker, or `--workers N`) on a
loopback port, started together and stopped with SIGTERM; and clients that speak each of
the three protocols, whole or streamed, and read the usage the answer reports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from tests.fakes.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = ("chat/completions", "messages", "responses")


@dataclass
class Served:
    """`semproxy serve --config FILE --listen 127.0.0.1:PORT [--workers N]`."""

    config: Path
    workers: int = 1
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    out: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spawn(self) -> None:
        self.out = self.config.with_name(f"serve-{self.port}.out")
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        with self.out.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "semproxy", "--log-level", "WARNING", "serve",
                 "--config", str(self.config), "--listen", f"127.0.0.1:{self.port}",
                 "--workers", str(self.workers), "--no-access-log"],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)

    def is_ready(self) -> bool:
        assert self.proc is not None and self.out is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"gateway exited early:\n{self.out.read_text()}")
        return self.out.read_text().count("semproxy listening on") >= self.workers

    def is_alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def start_all(gateways: list[Served], timeout: float = 30.0) -> None:
    """Spawn every gateway, then wait for all (they start in parallel)."""
    for gw in gateways:
        gw.spawn()
    deadline = time.monotonic() + timeout
    while not all(gw.is_ready() for gw in gateways):
        if time.monotonic() > deadline:
            raise RuntimeError("gateways did not start in time")
        time.sleep(0.05)


def write_config(path: Path, doc: dict[str, Any]) -> Path:
    path.write_bytes(orjson.dumps(doc))
    return path


def body(protocol: str, text: str, max_tokens: int, stream: bool) -> dict[str, Any]:
    if protocol == "messages":
        return {"model": "m", "max_tokens": max_tokens, "stream": stream,
                "messages": [{"role": "user", "content": text}]}
    if protocol == "responses":
        return {"model": "m", "input": text, "max_output_tokens": max_tokens, "stream": stream}
    extra = {"stream_options": {"include_usage": True}} if stream else {}
    return {"model": "m", "max_tokens": max_tokens, "stream": stream,
            "messages": [{"role": "user", "content": text}], **extra}


def usage_of(protocol: str, data: bytes, stream: bool) -> tuple[int, int]:
    """(input, output) tokens the answer reports, in any protocol, whole or streamed."""
    events = [orjson.loads(line[5:]) for line in data.splitlines()
              if line.startswith(b"data:") and line[5:].strip() != b"[DONE]"] if stream \
        else [orjson.loads(data)]
    given = made = 0
    for event in events:
        if protocol == "chat/completions" and event.get("usage"):
            given, made = event["usage"]["prompt_tokens"], event["usage"]["completion_tokens"]
        elif protocol == "messages":
            usage = (event.get("message") or {}).get("usage") or event.get("usage") or {}
            given = usage.get("input_tokens", given)
            made = usage.get("output_tokens", made)
        elif protocol == "responses":
            usage = (event.get("response") or event).get("usage") or {}
            if usage:
                given, made = usage["input_tokens"], usage["output_tokens"]
    return given, made


async def ask(http: aiohttp.ClientSession, url: str, protocol: str, text: str,
              max_tokens: int, stream: bool) -> tuple[int, tuple[int, int]]:
    """Status and reported usage ((0, 0) when refused) of one request."""
    async with http.post(f"{url}/v1/{protocol}", json=body(protocol, text, max_tokens, stream),
                         headers={"Authorization": "Bearer proof-key-0123"}) as resp:
        data = await resp.read()
    if resp.status != 200:
        return resp.status, (0, 0)
    return 200, usage_of(protocol, data, stream)
