"""A server-sent event stream cut into whole events, each one bounded in size and time.

The relay forwards what arrives, but never holds more than one unfinished
event: an upstream that sends one endless "event" (no blank line) is cut at
`max_event` bytes, and one that drips an event a byte at a time is cut when
the event took longer than `event_timeout_s` to complete. Complete events
that arrived together are passed on together, so a well-behaved stream costs
one search for the last blank line per chunk and no timer at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from semproxy.errors import UpstreamError, UpstreamTimeoutError
from semproxy.transport.base import Reply

_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")


def _last_end(data: bytes) -> int:
    """The index just past the last event boundary in `data`, or 0."""
    return max((i + len(end) for end in _ENDS if (i := data.rfind(end)) >= 0), default=0)


async def sse_events(reply: Reply, max_event: int, event_timeout_s: float,
                     label: str = "upstream") -> AsyncIterator[bytes]:
    """Runs of complete events from `reply`; a trailing unfinished event is passed at the end."""
    chunks = reply.iter_chunks().__aiter__()
    loop = asyncio.get_running_loop()
    pending: list[bytes] = []  # the unfinished event, in the pieces it came in
    size = 0
    tail = b""  # its last 3 bytes: a boundary may straddle two chunks
    started = 0.0
    while True:
        try:
            if pending:  # an event is half way: it has until its deadline to finish
                async with asyncio.timeout_at(started + event_timeout_s):
                    chunk = await anext(chunks)
            else:
                chunk = await anext(chunks)
        except StopAsyncIteration:
            break
        except TimeoutError:
            raise UpstreamTimeoutError(f"upstream {label} took longer than the timeout to "
                                       f"send one event") from None
        end = _last_end(tail + chunk) - len(tail) if pending else _last_end(chunk)
        if end > 0:  # at least one event completes in this chunk
            if pending:
                yield b"".join(pending) + chunk[:end]
            else:
                yield chunk if end == len(chunk) else chunk[:end]
            pending, size, tail = [], 0, b""
            chunk = chunk[end:]
            if not chunk:
                continue
        if not pending:
            started = loop.time()
        pending.append(chunk)
        size += len(chunk)
        tail = (tail + chunk)[-3:]
        if size > max_event:
            raise UpstreamError(f"upstream {label} sent an event larger than "
                                f"{max_event} bytes (max_sse_event_size)")
    if pending:
        yield b"".join(pending)
