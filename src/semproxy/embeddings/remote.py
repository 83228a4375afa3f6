"""Embeddings from an HTTP provider, through the same provider layer as chat.

Only the configured auth is sent: the client's own headers never reach this
call, because the request is built from the frozen target alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from semproxy.providers.base import EmbeddingsProvider
from semproxy.providers.http import HttpClients, Target


class RemoteEmbedder:
    def __init__(
        self, provider: EmbeddingsProvider, target: Target, clients: HttpClients, fingerprint: str
    ) -> None:
        self._provider = provider
        self._target = target
        self._clients = clients
        self.fingerprint = fingerprint

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await self._provider.embed(self._clients, self._target, texts)

    async def aclose(self) -> None:
        """The HTTP sessions belong to the gateway, which closes them."""
