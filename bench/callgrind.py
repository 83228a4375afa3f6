"""Counting the instructions a server executes while a fixed load runs (valgrind callgrind).

The server starts under callgrind with instrumentation off (`--instr-atstart=no`:
start-up runs at valgrind's uninstrumented speed and counts nothing). A
measurement window is `zero`, `on`, the load, `off`, `dump`; the dump's `totals:`
line is then exactly the instructions (event `Ir`, every thread of the process)
executed between `on` and `off`. `callgrind_control` reaches the process through
valgrind's gdbserver (`vgdb`), so it works while the server sleeps in epoll.

Instruction counts do not depend on how busy the machine is, which is why they
resolve differences that timed runs on a shared machine cannot.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

_TOTALS = re.compile(r"^totals:\s+(\d+)", re.M)
_EVENTS = re.compile(r"^events:\s+(.+)$", re.M)


def valgrind_missing() -> str:
    """Why callgrind cannot run here ('' when it can)."""
    absent = [t for t in ("valgrind", "callgrind_control", "vgdb") if not shutil.which(t)]
    return f"missing {', '.join(absent)} (Debian package valgrind)" if absent else ""


def callgrind_argv(out_file: Path, argv: list[str]) -> list[str]:
    """`argv` run under callgrind, counting nothing until switched on.

    `--dump-line=no` keeps each dump to per-function totals (smaller, same sums);
    `--vgdb=yes` is valgrind's default, spelled out because the control needs it.
    """
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--vgdb=yes",
            "--dump-line=no", f"--callgrind-out-file={out_file}", *argv]


def dump_totals(text: str) -> int:
    """Instructions (`Ir`) in one callgrind dump: its `totals:` line.

    The `summary:` line is not used: in a dump taken with instrumentation off it
    is not the window's total (valgrind 3.19 writes an underflowed value there).
    """
    events = _EVENTS.search(text)
    if events is None or events.group(1).split()[0] != "Ir":
        raise ValueError("not a callgrind dump counting Ir first (no 'events: Ir' line)")
    totals = _TOTALS.search(text)
    if totals is None:
        raise ValueError("callgrind dump without a 'totals:' line")
    return int(totals.group(1))


class Callgrind:
    """The control of one process running under `callgrind_argv(out_file, ...)`."""

    def __init__(self, pid: int, out_file: Path) -> None:
        self.pid = pid
        self.out_file = out_file

    def _control(self, *args: str) -> None:
        res = subprocess.run(["callgrind_control", *args, str(self.pid)],
                             capture_output=True, text=True, timeout=120)
        if res.returncode != 0 or "Error" in res.stdout + res.stderr:
            raise RuntimeError(f"callgrind_control {' '.join(args)} failed: "
                               f"{(res.stdout + res.stderr).strip()[-300:]}")

    def start_window(self) -> None:
        self._control("--zero")
        self._control("--instr=on")

    def end_window(self) -> int:
        """Instrumentation off, then the instructions counted since `start_window`."""
        self._control("--instr=off")
        before = set(self._dumps())
        self._control("--dump")
        new = sorted(set(self._dumps()) - before, key=_dump_number)
        if not new:
            raise RuntimeError(f"callgrind wrote no dump next to {self.out_file}")
        return dump_totals(new[-1].read_text(errors="replace"))

    def _dumps(self) -> list[Path]:
        return list(self.out_file.parent.glob(self.out_file.name + ".*"))


def _dump_number(path: Path) -> int:
    suffix = path.name.rsplit(".", 1)[-1]
    return int(suffix) if suffix.isdigit() else -1
