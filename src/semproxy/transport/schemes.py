"""`SchemeTransport`: the gateway's one transport, passing each target to the transport of
its URL scheme (`echo://` to `EchoTransport`, anything else to `AiohttpTransport`)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from semproxy.transport.base import Reply, Transport
from semproxy.transport.echo import EchoTransport
from semproxy.transport.http import AiohttpTransport
from semproxy.transport.target import Target


class SchemeTransport:
    def __init__(self, http: Transport | None = None) -> None:
        self.http = http or AiohttpTransport()
        self.echo = EchoTransport()

    # The chosen transport's own coroutine, not one more frame around it.
    def post(self, target: Target, data: bytes, request_id: str = ""
             ) -> Coroutine[Any, Any, Reply]:
        chosen = self.echo if target.url.startswith("echo:") else self.http
        return chosen.post(target, data, request_id)

    def get(self, target: Target) -> Coroutine[Any, Any, Reply]:
        chosen = self.echo if target.url.startswith("echo:") else self.http
        return chosen.get(target)

    async def aclose(self) -> None:
        await self.http.aclose()
