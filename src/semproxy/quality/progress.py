"""A plain progress bar on stderr for long `eval` / `calibrate` runs (no dependency)."""

from __future__ import annotations

import sys
from typing import TextIO

WIDTH = 30


class ProgressBar:
    """Redraws one line; silent when the stream is not a terminal, unless `force`."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None,
                 force: bool = False) -> None:
        self.total = max(total, 1)
        self.label = label
        self.done = 0
        self._stream = stream or sys.stderr
        self._is_shown = force or self._stream.isatty()

    def advance(self, count: int) -> None:
        self.done = min(self.done + count, self.total)
        if self._is_shown:
            filled = WIDTH * self.done // self.total
            self._stream.write(f"\r{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] "
                               f"{self.done}/{self.total}")
            self._stream.flush()

    def close(self) -> None:
        if self._is_shown:
            self._stream.write("\n")
            self._stream.flush()
