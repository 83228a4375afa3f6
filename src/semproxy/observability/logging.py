"""Structured logs: one JSON object per line, and the per-request access log.

Secrets never reach a log line: nothing here logs headers, and every message
passes through `redact`, which blanks bearer tokens and key-like values in case
a foreign library's exception text carries one.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from typing import Any

import orjson

# After `Authorization:` the credential follows its scheme word (`Token`, `Basic`):
# the scheme is kept, the credential masked.
_SECRET = re.compile(
    r"(?i)(bearer\s+|api[-_]?key[=:\s\"']+|authorization[=:\s\"']+(?:[A-Za-z-]+\s+)?|sk-)"
    r"[A-Za-z0-9._~+/=-]{4,}"
)


def redact(text: str) -> str:
    # Every match contains one of the words tested below (any case); most lines (one
    # per request) contain none, and four substring tests of the lowered text cost a
    # fraction of the case-insensitive scan (spelled out: a generator costs more than
    # the tests). Only for ASCII text: Unicode case folding lets e.g. U+017F match "s".
    if text.isascii():
        lower = text.lower()
        if not ("bearer" in lower or "api" in lower or "authorization" in lower
                or "sk-" in lower):
            return text
    return _SECRET.sub(lambda m: m.group(1) + "***", text)


_second: list[Any] = [None, ""]  # the last whole second formatted, and its text
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))  # formatted once, not per line


def timestamp(created: float) -> str:
    """UTC ISO-8601 with milliseconds; the date part is formatted once per second."""
    whole = int(created)
    if _second[0] != whole:
        _second[:] = [whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))]
    date: str = _second[1]
    return date + _MILLIS[int((created - whole) * 1000)]


# Level names as lines spell them, looked up without a call per line.
_LEVELS = {level: logging.getLevelName(level).lower() for level in
           (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)}


def _entry(created: float, level: str, logger: str, msg: str) -> dict[str, Any]:
    return {"ts": timestamp(created), "level": level.lower(), "logger": logger,
            "msg": redact(msg)}


class JsonFormatter(logging.Formatter):
    """Render records as JSON; fields passed as `extra={"fields": {...}}` are merged in."""

    def format(self, record: logging.LogRecord) -> str:
        entry = _entry(record.created, record.levelname, record.name, record.getMessage())
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = redact(self.formatException(record.exc_info).splitlines()[-1])
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class LineBatchingHandler(logging.Handler):
    """Write formatted lines to a file descriptor in batches, not one syscall per line.

    With an access-log line per request, a write and flush per line cost more
    than the rest of the logging (measured: about 40 us of CPU per request under
    load). Lines are collected and written every `interval_s` by a small flusher
    thread, when `max_pending` lines wait, and at once for errors. Each write
    holds whole lines and stays within PIPE_BUF bytes, so the lines of several
    workers sharing one pipe never interleave mid-line.
    """

    PIPE_BUF = 4096

    def __init__(self, fd: int = 2, interval_s: float = 0.2, max_pending: int = 256) -> None:
        super().__init__()
        self._fd = fd
        self._interval = interval_s
        self._max_pending = max_pending
        self._lines: list[bytes] = []
        self._flushing = False  # a flusher thread runs in this process
        # A forked worker has no flusher thread (threads do not survive fork) and
        # must not write the parent's unflushed lines a second time.
        os.register_at_fork(after_in_child=self._forget_parent)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record).encode("utf-8", "replace")
        except Exception:  # logging must never break the caller
            self.handleError(record)
            return
        self.append(line, record.levelno)

    def append(self, line: bytes, level: int) -> None:
        """Queue one finished line (its newline is added when written). The caller holds
        the handler lock (`emit` through `Handler.handle`, `write_direct` itself): the
        flusher thread swaps the list under it."""
        if not self._flushing:
            self._start_flusher()  # first line in this process (workers are forked)
        self._lines.append(line)
        if level >= logging.ERROR or len(self._lines) >= self._max_pending:
            self._write()

    def _forget_parent(self) -> None:
        self._flushing = False
        self._lines = []

    def _start_flusher(self) -> None:
        self._flushing = True
        threading.Thread(target=self._flush_forever, name="log-flusher", daemon=True).start()

    def _flush_forever(self) -> None:
        while True:
            time.sleep(self._interval)
            self.flush()

    def flush(self) -> None:
        self.acquire()
        try:
            self._write()
        finally:
            self.release()

    def _write(self) -> None:
        lines, self._lines = self._lines, []
        chunk: list[bytes] = []
        size = 0
        for line in lines:
            if chunk and size + len(line) + 1 > self.PIPE_BUF:
                self._send(b"\n".join(chunk) + b"\n")
                chunk, size = [], 0
            chunk.append(line)
            size += len(line) + 1
        if chunk:
            self._send(b"\n".join(chunk) + b"\n")

    def _send(self, data: bytes) -> None:
        try:
            while data:
                data = data[os.write(self._fd, data):]
        except OSError:  # a closed stderr must not take the gateway down
            pass

    def close(self) -> None:
        self.flush()
        super().close()


def direct_handler(logger: logging.Logger, level: int) -> LineBatchingHandler | None:
    """The handler a record of `logger` would reach when that is all logging would do.

    That is: no logger on the way up and no handler has a filter, and exactly one
    handler is reached, a `LineBatchingHandler` with the JSON formatter. Anything
    else (text format, a test's capture handler, an application's own handlers)
    gets None and goes through the logging module. Whether the logger is enabled
    is the caller's decision, as with `Logger.handle`.
    """
    found: LineBatchingHandler | None = None
    node: logging.Logger | None = logger
    while node is not None:
        if node.filters:
            return None
        for handler in node.handlers:
            if (found is not None or type(handler) is not LineBatchingHandler
                    or handler.filters or level < handler.level
                    or type(handler.formatter) is not JsonFormatter):
                return None
            found = handler
        node = node.parent if node.propagate else None
    return found


def write_direct(logger: logging.Logger, level: int, msg: str, fields: dict[str, Any]) -> bool:
    """Write one JSON line for `logger` without building a `LogRecord`, when possible.

    The access log writes a line per request; a record, its formatting and the
    handler machinery cost several times the line itself. The line is the same
    one `JsonFormatter` would produce. False when `direct_handler` finds the
    logging set-up is anything but the plain one; the caller then hands a record
    to `Logger.handle` instead.
    """
    handler = direct_handler(logger, level)
    if handler is None:
        return False
    name = _LEVELS.get(level) or logging.getLevelName(level).lower()
    line = orjson.dumps({"ts": timestamp(time.time()), "level": name, "logger": logger.name,
                         "msg": redact(msg), **fields}, default=str)
    with handler.lock:  # type: ignore[union-attr]  # a Handler made in __init__ has one
        handler.append(line, level)
    return True


def log_line(logger: logging.Logger, level: int, msg: str,
             fields: dict[str, Any] | None = None) -> None:
    """Log a finished message (no %-arguments) with optional JSON fields, cheaply.

    For lines the request path may write on every request (the access log, the
    semantic fallback warning): `write_direct` when the set-up allows it, else
    an ordinary record. Whether `logger` is enabled for `level` is the caller's
    check, so a line a route asks for can be written past a raised level.
    """
    if not write_direct(logger, level, msg, fields or {}):
        logger.handle(logger.makeRecord(logger.name, level, __file__, 0, msg, (), None,
                                        extra=None if fields is None else {"fields": fields}))


def setup_logging(level: str = "INFO", fmt: str = "json") -> None:
    handler: logging.Handler
    try:
        handler = LineBatchingHandler(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt == "json"
        else TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    # Neither formatter uses the caller's file/line, thread or process, and
    # collecting them costs microseconds per record (a stack walk, thread and pid
    # lookups) on every access-log line: switch them off, as the logging HOWTO's
    # optimisation section suggests.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
