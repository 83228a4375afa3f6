"""The transport seam: one small interface between the gateway and whatever carries a request.

Everything above it (the call phase, remote embeddings, health probes) sees a
`Transport` and the `Reply` it returns; nothing above it imports aiohttp's
client. `AiohttpTransport` (`http.py`) is the network, `EchoTransport`
(`echo.py`) the built-in demo upstream, `SchemeTransport` (`schemes.py`) picks
between them by the target's URL scheme.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from semproxy.transport.target import Target


class Reply(Protocol):
    """An upstream answer whose body may still be arriving.

    `read` returns the whole body (and gives the connection back); `iter_chunks`
    yields it as it arrives. The holder calls `release` when done with a body
    it did not read whole, or `abort` to drop the connection at once.
    """

    status: int
    content_type: str

    async def read(self) -> bytes: ...

    def iter_chunks(self) -> AsyncIterator[bytes]: ...

    def release(self) -> None: ...

    def abort(self) -> None: ...


class Transport(Protocol):
    """Sends requests to targets. Failures are the gateway's errors: `UpstreamConnectError`
    (nothing was sent), `UpstreamTimeoutError`, or `UpstreamError`."""

    async def post(self, target: Target, data: bytes, request_id: str = "") -> Reply:
        """POST `data`; the reply once its headers arrived. Never sent twice."""

    async def get(self, target: Target) -> Reply:
        """GET (health probes): the reply once its headers arrived."""

    async def aclose(self) -> None: ...
