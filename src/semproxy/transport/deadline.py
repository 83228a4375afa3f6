"""One deadline for a whole upstream attempt: headers and body within `attempt_timeout`.

`asyncio.timeout_at` around each wait, plus aiohttp's per-read timer on every
chunk, cost ~40k instructions per request between them. A `Deadline` is one
timer, armed when the attempt starts and cancelled when its body is read, and a
plain (not async) context manager around each wait in between: when the time
comes, the task waiting inside it is cancelled and the wait raises
`TimeoutError`, as under `asyncio.timeout`. A deadline that passes while
nothing waits (between the headers and the body read) is noted, and the next
wait raises at once. A cancellation from elsewhere (the client left) is never
turned into a timeout.
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class Deadline:
    __slots__ = ("_cancelling", "_handle", "_task", "expired")

    def __init__(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        self.expired = False
        self._task: asyncio.Task[object] | None = None  # the task waiting inside, if any
        self._cancelling = 0
        self._handle = loop.call_at(when, self._expire)

    def _expire(self) -> None:
        self.expired = True
        if self._task is not None:
            self._task.cancel()

    def __enter__(self) -> Deadline:
        if self.expired:
            raise TimeoutError
        task = asyncio.current_task()
        assert task is not None, "a deadline is waited on inside a task"
        self._task = task
        self._cancelling = task.cancelling()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        task, self._task = self._task, None
        if not self.expired or task is None:
            return
        # The timer cancelled this wait. As with asyncio.timeout, it is a timeout only
        # when no one else cancelled the task too.
        if task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
            raise TimeoutError from exc

    def cancel(self) -> None:
        """The attempt is over (or no longer bounded): the timer will not fire."""
        self._handle.cancel()
