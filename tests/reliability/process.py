"""A gateway in its own process (`python -m semproxy serve`), watched through /proc.

Tests that measure memory, file descriptors or signal handling need the gateway
outside the test process; the soak command (bench/soak.py) uses the same helper.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Self

import orjson

ROOT = Path(__file__).resolve().parents[2]


class GatewayProcess:
    """`semproxy serve --config FILE --listen 127.0.0.1:0`, JSON logs captured to a file."""

    def __init__(self, config: dict[str, Any], workdir: Path,
                 env: dict[str, str] | None = None, listen: str = "127.0.0.1:0",
                 open_files: tuple[int, int] | None = None, args: tuple[str, ...] = ()
                 ) -> None:
        self.listen = listen
        self.args = args  # more `serve` options
        self.open_files = open_files  # (soft, hard) RLIMIT_NOFILE the gateway starts with
        self.config_path = workdir / "gateway.json"
        self.log_path = workdir / "gateway.log"
        self.out_path = workdir / "gateway.out"
        self.write_config(config)
        self._env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
                     **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.admin_url = ""

    def write_config(self, config: dict[str, Any]) -> None:
        """Replace the config file atomically (the gateway's FileSource polls it)."""
        tmp = self.config_path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(config))
        os.replace(tmp, self.config_path)

    def start(self, timeout: float = 30.0) -> Self:
        deadline = self._spawn(timeout)
        while not self._ready(deadline, timeout):
            time.sleep(0.05)
        return self

    async def astart(self, timeout: float = 30.0) -> Self:
        """`start` for async tests whose fakes must keep serving while the gateway warms up."""
        deadline = self._spawn(timeout)
        while not self._ready(deadline, timeout):
            await asyncio.sleep(0.05)
        return self

    def _spawn(self, timeout: float) -> float:
        with self.out_path.open("wb") as out, self.log_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "semproxy", "--log-format", "json", "serve",
                 "--config", str(self.config_path), "--listen", self.listen, *self.args],
                stdout=out, stderr=err, env=self._env, cwd=ROOT,
                preexec_fn=None if self.open_files is None else self._limit_open_files)
        return time.monotonic() + timeout

    def _limit_open_files(self) -> None:
        assert self.open_files is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, self.open_files)

    def _ready(self, deadline: float, timeout: float) -> bool:
        assert self.proc is not None
        for line in self.out_path.read_text().splitlines():
            if line.startswith("semproxy listening on "):
                self.url = line.split()[3]
            if line.startswith("semproxy admin on "):
                self.admin_url = line.split()[3]
        if self.url and (self.admin_url or "admin" not in self._config()):
            return True
        if self.proc.poll() is not None:
            raise RuntimeError(f"gateway exited early:\n{self.logs()}")
        if time.monotonic() > deadline:
            self.stop()
            raise RuntimeError(f"gateway did not start within {timeout}s:\n{self.logs()}")
        return False

    def _config(self) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads(self.config_path.read_bytes())
        return data

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def is_alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS line")

    def fd_count(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal(self, signum: int = signal.SIGTERM) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL if it does not leave in time; the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TracedMemory:
    """Python-level bytes a gateway process holds, read from its tracer's samples
    (`traced/sitecustomize.py`): pass `env` to `GatewayProcess`, then ask `current`."""

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / "traced-memory"
        self.env = {"TRACED_MEMORY": str(self.path),
                    "PYTHONPATH": os.pathsep.join(
                        (str(Path(__file__).parent / "traced"), str(ROOT / "src"), str(ROOT)))}

    def current(self, settle: float = 0.05) -> int:
        """The bytes of a sample taken after this call (waiting `settle` seconds)."""
        since = time.monotonic() + settle
        time.sleep(settle)
        while not (samples := self.samples(since)):
            time.sleep(0.01)
        return samples[0][1]

    def trim(self) -> None:
        """Have the gateway return its allocator's free memory to the system (malloc_trim)."""
        request = self.path.with_name(self.path.name + ".trim")
        request.touch()
        while request.exists():
            time.sleep(0.01)

    def peak(self, since: float) -> int:
        """The most bytes held at any moment from `since` (monotonic) until now."""
        until = time.monotonic()
        while not self.samples(until):
            time.sleep(0.01)
        return max(peak for _, _, peak in self.samples(since))

    def samples(self, since: float) -> list[tuple[float, int, int]]:
        """(monotonic, current, peak since the sample before) from `since` on."""
        text = self.path.read_text() if self.path.exists() else ""
        rows = (line.split() for line in text.splitlines())
        return [(float(r[0]), int(r[1]), int(r[2])) for r in rows
                if len(r) == 3 and float(r[0]) >= since]
