"""`SchemeTransport`: the gateway's one transport, passing each target to the transport of
its URL scheme: `http(s)://` to `AiohttpTransport`, `echo://` to `EchoTransport`, and
any other scheme to the in-process transport registered for it (the gateway registers
`count://`, the local token counter that lives with its protocol)."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import Any

from semproxy.transport.base import Reply, Transport
from semproxy.transport.echo import EchoTransport
from semproxy.transport.http import AiohttpTransport
from semproxy.transport.target import Target


class SchemeTransport:
    def __init__(self, http: Transport | None = None,
                 local: Mapping[str, Transport] | None = None) -> None:
        self.http = http or AiohttpTransport()
        self.local: dict[str, Transport] = {"echo": EchoTransport(), **(local or {})}

    def _for(self, url: str) -> Transport:
        if url.startswith("http"):
            return self.http
        return self.local.get(url.partition(":")[0], self.http)

    # The chosen transport's own coroutine, not one more frame around it.
    def post(self, target: Target, data: bytes, request_id: str = ""
             ) -> Coroutine[Any, Any, Reply]:
        return self._for(target.url).post(target, data, request_id)

    def get(self, target: Target) -> Coroutine[Any, Any, Reply]:
        return self._for(target.url).get(target)

    async def aclose(self) -> None:
        await self.http.aclose()
