"""`Deadline`: one timer around every wait of an attempt, a timeout only of its own making."""

from __future__ import annotations

import asyncio
import time

import pytest

from semproxy.transport.deadline import Deadline


def deadline_in(seconds: float) -> Deadline:
    loop = asyncio.get_running_loop()
    return Deadline(loop, loop.time() + seconds)


async def test_a_wait_past_the_deadline_raises_timeout_error() -> None:
    deadline = deadline_in(0.05)
    started = time.monotonic()
    with pytest.raises(TimeoutError), deadline:
        await asyncio.sleep(5)
    assert time.monotonic() - started < 1


async def test_one_deadline_bounds_every_wait_together() -> None:
    deadline = deadline_in(0.15)
    with deadline:
        await asyncio.sleep(0.1)
    with pytest.raises(TimeoutError), deadline:
        await asyncio.sleep(0.1)


async def test_a_deadline_that_passed_between_waits_fails_the_next_at_once() -> None:
    deadline = deadline_in(0.01)
    await asyncio.sleep(0.05)  # not inside: nothing is cancelled
    assert deadline.expired
    with pytest.raises(TimeoutError), deadline:
        await asyncio.sleep(5)


async def test_a_cancelled_deadline_never_fires() -> None:
    deadline = deadline_in(0.01)
    deadline.cancel()
    with deadline:
        await asyncio.sleep(0.05)
    assert not deadline.expired


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    deadline = deadline_in(5)

    async def waits() -> None:
        with deadline:
            await asyncio.sleep(5)

    task = asyncio.create_task(waits())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancellation_from_elsewhere_at_the_deadline_is_not_swallowed() -> None:
    loop = asyncio.get_running_loop()
    when = loop.time() + 0.02
    deadline = Deadline(loop, when)

    async def waits() -> None:
        with deadline:
            await asyncio.sleep(5)

    task = asyncio.create_task(waits())
    loop.call_at(when, task.cancel)  # due with the deadline: both before the task resumes
    with pytest.raises(asyncio.CancelledError):
        await task
    assert deadline.expired
