"""The JSON log lines: the direct path writes what the record path writes, or stands aside."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest

from semproxy.observability.logging import (
    JsonFormatter,
    LineBatchingHandler,
    TextFormatter,
    direct_handler,
    redact,
    timestamp,
    write_direct,
)


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    yield read_fd, write_fd
    os.close(read_fd)
    os.close(write_fd)


@pytest.fixture
def logger(pipe: tuple[int, int]) -> Iterator[logging.Logger]:
    """A logger of its own, not propagating, with one batching JSON handler on the pipe."""
    log = logging.getLogger("semproxy.test.direct")
    handler = LineBatchingHandler(pipe[1], interval_s=60)
    handler.setFormatter(JsonFormatter())
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.INFO)
    yield log
    log.handlers.clear()
    log.propagate = True


def only_ours(logger: logging.Logger) -> logging.Handler:
    """Drop the capture handlers pytest attaches to loggers during the test call."""
    ours = [h for h in logger.handlers if isinstance(h, LineBatchingHandler)]
    logger.handlers[:] = ours
    return ours[0]


def lines(handler: logging.Handler, read_fd: int) -> list[dict[str, Any]]:
    handler.flush()
    return [json.loads(line) for line in os.read(read_fd, 1 << 16).splitlines()]


FIELDS = {"request_id": "r-1", "route": "rr", "status": 200, "tokens": {"total": 3},
          "consumer": None, "latency_ms": 1.5}


def test_direct_line_equals_the_formatter_line(
    logger: logging.Logger, pipe: tuple[int, int]
) -> None:
    handler = only_ours(logger)
    assert direct_handler(logger, logging.INFO) is handler
    assert write_direct(logger, logging.INFO, "rr r-1 -> a 200 Bearer sk-abcdef123456", FIELDS)
    logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 0,
                                    "rr r-1 -> a 200 Bearer sk-abcdef123456", (), None,
                                    extra={"fields": FIELDS}))
    direct, formatted = lines(handler, pipe[0])
    assert list(direct) == list(formatted)  # same keys in the same order
    assert {**direct, "ts": None} == {**formatted, "ts": None}
    assert direct["msg"] == "rr r-1 -> a 200 Bearer ***"  # redacted on both paths
    assert direct["level"] == "info" and direct["logger"] == "semproxy.test.direct"


def test_any_other_setup_goes_through_logging(logger: logging.Logger) -> None:
    handler = only_ours(logger)
    assert direct_handler(logger, logging.INFO) is handler
    extra = logging.StreamHandler()
    logger.addHandler(extra)  # what a test's log capture or an application adds
    assert direct_handler(logger, logging.INFO) is None
    logger.removeHandler(extra)
    handler.setFormatter(TextFormatter())
    assert direct_handler(logger, logging.INFO) is None
    handler.setFormatter(JsonFormatter())
    handler.addFilter(lambda record: True)
    assert direct_handler(logger, logging.INFO) is None
    handler.filters.clear()
    handler.setLevel(logging.WARNING)
    assert not write_direct(logger, logging.INFO, "m", {})
    handler.setLevel(logging.NOTSET)
    logger.propagate = True  # the root's handlers would be reached as well
    logging.getLogger().addHandler(extra)
    try:
        assert direct_handler(logger, logging.INFO) is None
    finally:
        logging.getLogger().removeHandler(extra)


def test_timestamp_keeps_milliseconds_across_seconds() -> None:
    assert timestamp(0.25) == "1970-01-01T00:00:00.250Z"
    assert timestamp(1.999) == "1970-01-01T00:00:01.999Z"
    assert timestamp(86400.0) == "1970-01-02T00:00:00.000Z"
    assert timestamp(0.5) == "1970-01-01T00:00:00.500Z"


@pytest.mark.parametrize(("line", "expected"), [
    ("rr 0f8e15e3b4192940 -> a 200", "rr 0f8e15e3b4192940 -> a 200"),
    ("auth failed: BEARER abcdEFGH1234", "auth failed: BEARER ***"),
    ("key sk-live1234567890 rejected", "key sk-*** rejected"),
    ("Authorization: xyzw98765", "Authorization: ***"),
    ("x-api-key=abcd1234 sent", "x-api-key=*** sent"),
    # U+017F (long s) matches "s" when the pattern ignores case
    ("non-ASCII \u017fk-abcdef123456 é", "non-ASCII \u017fk-*** é"),
])
def test_redact_blanks_secrets_and_leaves_plain_lines_alone(line: str, expected: str) -> None:
    assert redact(line) == expected
