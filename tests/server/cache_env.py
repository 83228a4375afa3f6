"""A gateway with a response cache on a real socket, and requests in every client protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from tests.conftest import instance, route_config

from semproxy.admin.run import RunningGateway

PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages",
         "responses": "/v1/responses"}


def cached_config(url: str, cache: dict[str, Any] | None = None, **plugin: Any
                  ) -> dict[str, Any]:
    """One `/v1/*` route, instance `a` at `url`, with `ai-cache` (`cache` its block)."""
    config = route_config([instance("a", url)], uri="/v1/*", **plugin)
    config["routes"][0]["plugins"]["ai-cache"] = cache if cache is not None else {
        "layers": ["exact", "semantic"]}
    return config


def body(protocol: str, text: str, stream: bool = False, **extra: Any) -> dict[str, Any]:
    """A request for `text` in `protocol`, as that protocol's SDK would send it."""
    if protocol == "messages":
        return {"model": "auto", "max_tokens": 64, "stream": stream,
                "messages": [{"role": "user", "content": text}], **extra}
    if protocol == "responses":
        return {"model": "auto", "input": text, "stream": stream, **extra}
    return {"model": "auto", "stream": stream, "messages": [{"role": "user", "content": text}],
            **extra}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def cache(self) -> str | None:
        return self.headers.get("X-AI-Cache-Status")

    def json(self) -> Any:
        return orjson.loads(self.raw)

    def events(self) -> list[dict[str, Any]]:
        """The JSON payloads of an event stream (`[DONE]` as {"done": True})."""
        out = []
        for line in self.raw.splitlines():
            if line.startswith(b"data: "):
                data = line[6:]
                out.append({"done": True} if data == b"[DONE]" else orjson.loads(data))
        return out


async def ask(http: aiohttp.ClientSession, gw: RunningGateway, protocol: str, text: str,
              stream: bool = False, headers: dict[str, str] | None = None, **extra: Any
              ) -> Answer:
    async with http.post(gw.url + PATHS[protocol], json=body(protocol, text, stream, **extra),
                         headers=headers or {}) as resp:
        return Answer(resp.status, dict(resp.headers), await resp.read())


async def settled(gw: RunningGateway) -> None:
    """Wait for the cache's background writes (an answer is stored after it went out)."""
    await gw.gateway.caches.drain()
