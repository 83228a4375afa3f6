"""`SchemeTransport`: the gateway's one transport, passing each target to the transport of
its URL scheme (`echo://` to `EchoTransport`, anything else to `AiohttpTransport`)."""

from __future__ import annotations

from semproxy.transport.base import Reply, Transport
from semproxy.transport.echo import EchoTransport
from semproxy.transport.http import AiohttpTransport
from semproxy.transport.target import Target


class SchemeTransport:
    def __init__(self, http: Transport | None = None) -> None:
        self.http = http or AiohttpTransport()
        self.echo = EchoTransport()

    def _for(self, target: Target) -> Transport:
        return self.echo if target.url.startswith("echo:") else self.http

    async def post(self, target: Target, data: bytes, request_id: str = "") -> Reply:
        return await self._for(target).post(target, data, request_id)

    async def get(self, target: Target) -> Reply:
        return await self._for(target).get(target)

    async def aclose(self) -> None:
        await self.http.aclose()
