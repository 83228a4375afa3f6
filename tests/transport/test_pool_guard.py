"""The start-up check of the upstream pool guard: it passes with the installed aiohttp and
fails loudly, naming aiohttp, when the guard does not work."""

from __future__ import annotations

import aiohttp
import pytest

from semproxy.transport.pool import GuardedConnector, check_pool_guard


async def test_the_guard_works_with_the_installed_aiohttp() -> None:
    await check_pool_guard()


async def test_a_pool_without_the_guard_fails_the_check() -> None:
    # aiohttp's own connector is what semproxy would run on if the guard's hooks were
    # renamed away in a new release: a stray answer leaves the connection open.
    with pytest.raises(RuntimeError, match=f"aiohttp {aiohttp.__version__}") as info:
        await check_pool_guard(aiohttp.TCPConnector, timeout_s=0.3)
    assert "constraints.txt" in str(info.value)


class IdleUnmarked(GuardedConnector):
    """A guard whose `_release` hook is no longer called (or no longer marks idle)."""

    def _release(self, key: object, protocol: object, *, should_close: bool = False) -> None:
        aiohttp.TCPConnector._release(self, key, protocol, should_close=should_close)  # type: ignore[arg-type]


async def test_a_guard_that_never_marks_connections_idle_fails_the_check() -> None:
    with pytest.raises(RuntimeError, match="pool guard"):
        await check_pool_guard(IdleUnmarked, timeout_s=0.3)
