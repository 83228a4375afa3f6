"""`MemoryReply`: a complete answer held in memory, for answers that never crossed a network.

The echo transport answers with it; so can a phase that ends a request early
(a stored answer from the response cache). The relay treats it like any
upstream reply: read whole, or iterated one event at a time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator


class MemoryReply:
    """A complete reply held in memory, served whole or as one chunk per event."""

    __slots__ = ("_chunks", "content_type", "status")

    def __init__(self, chunks: list[bytes], content_type: str, status: int = 200) -> None:
        self._chunks = chunks
        self.status = status
        self.content_type = content_type

    async def read(self) -> bytes:
        return b"".join(self._chunks)

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk

    def release(self) -> None:
        self._chunks = []

    def abort(self) -> None:
        self._chunks = []
