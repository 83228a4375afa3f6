"""Structured logs: one JSON object per line, and the per-request access log.

Secrets never reach a log line: nothing here logs headers, and every message
passes through `redact`, which blanks bearer tokens and key-like values in case
a foreign library's exception text carries one.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from typing import Any

import orjson

_SECRET = re.compile(
    r"(?i)(bearer\s+|api[-_]?key[=:\s\"']+|authorization[=:\s\"']+|sk-)[A-Za-z0-9._~+/=-]{4,}"
)


def redact(text: str) -> str:
    return _SECRET.sub(lambda m: m.group(1) + "***", text)


class JsonFormatter(logging.Formatter):
    """Render records as JSON; fields passed as `extra={"fields": {...}}` are merged in."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = redact(self.formatException(record.exc_info).splitlines()[-1])
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(level: str = "INFO", fmt: str = "json") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt == "json"
        else TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
