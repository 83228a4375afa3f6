"""Embeddings from an HTTP endpoint (OpenAI's `/v1/embeddings` shape), through the transport.

Only the configured auth is sent: the client's own headers never reach this
call, because the request is built from the frozen target alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from semproxy.embeddings.response import parse_embeddings_response
from semproxy.errors import EmbeddingError, UpstreamError, UpstreamTimeoutError
from semproxy.transport.base import Transport
from semproxy.transport.target import Target


class RemoteEmbedder:
    def __init__(self, target: Target, transport: Transport, fingerprint: str = "") -> None:
        self._target = target
        self._transport = transport
        self.fingerprint = fingerprint

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        target = self._target
        payload: dict[str, Any] = {"input": list(texts)}
        if target.model:
            payload["model"] = target.model
        try:
            # Routing waits on this call, so it gets one deadline for the whole
            # exchange, unlike chat whose timeout bounds each read of a stream.
            async with asyncio.timeout(target.net.timeout_s):
                reply = await self._transport.post(target, orjson.dumps(payload))
                raw = await reply.read()
        except UpstreamTimeoutError as exc:
            raise EmbeddingError("embedding endpoint timed out", "embedding_timeout") from exc
        except UpstreamError as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc.message}") from exc
        except TimeoutError as exc:
            raise EmbeddingError("embedding endpoint timed out", "embedding_timeout") from exc
        return parse_embeddings_response(reply.status, raw, len(texts))

    async def aclose(self) -> None:
        """The transport belongs to the gateway, which closes it."""
