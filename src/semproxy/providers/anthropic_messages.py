"""`anthropic-messages`: Anthropic's native Messages API (`POST /v1/messages`).

The `anthropic` provider keeps meaning what it means in APISIX configs:
Anthropic's OpenAI-compatible endpoint. This one speaks Anthropic's own
protocol, so tool use, stop reasons and usage come back as Anthropic reports
them. The gateway's Chat Completions body is translated on the way out and the
answer (whole, streamed, or an error) on the way back, so every client
protocol, failover and metrics work as with any other provider. An Anthropic
client's own request is sent unchanged (`relay_native`) and its answer relayed
unchanged: nothing is lost to translation (cache control, documents, thinking).
Credentials go in `auth.header` (`x-api-key`); `anthropic-version` is sent as
2023-06-01 unless the instance sets its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson

from semproxy.errors import UpstreamError
from semproxy.protocols.anthropic_native import (
    ChunksFromMessages,
    to_chat_error,
    to_completion,
    to_messages,
)
from semproxy.providers.base import OpenAIStyleProvider, Reply
from semproxy.providers.http import HttpClients, NetPolicy, Target
from semproxy.providers.sse import sse_events

API_VERSION = "2023-06-01"


class MessagesReply:
    """An Anthropic answer read as a Chat Completions one."""

    __slots__ = ("_net", "_reply", "content_type", "label", "status")

    def __init__(self, reply: Reply, net: NetPolicy, label: str) -> None:
        self._reply = reply
        self._net = net
        self.label = label
        self.status = reply.status
        self.content_type = reply.content_type

    async def read(self) -> bytes:
        body = await self._reply.read()
        if self.status >= 400:
            return to_chat_error(body, self.status)
        try:
            return orjson.dumps(to_completion(orjson.loads(body)))
        except (orjson.JSONDecodeError, AttributeError, TypeError) as exc:
            raise UpstreamError("upstream answered with a body that is not an Anthropic "
                                "message") from exc

    async def iter_chunks(self) -> AsyncIterator[bytes]:
        translator = ChunksFromMessages()
        async for events in sse_events(self._reply, self._net.max_event, self._net.timeout_s,
                                       self.label):
            out = translator.feed(events)
            if out:
                yield out

    def release(self) -> None:
        self._reply.release()

    def abort(self) -> None:
        self._reply.abort()


class AnthropicMessagesProvider(OpenAIStyleProvider):
    name = "anthropic-messages"
    native_protocol = "messages"  # Anthropic clients' requests go as they are
    base_url = "https://api.anthropic.com"
    chat_path = "/v1/messages"
    embeddings_path = None

    def target(self, endpoint: str | None, auth: Any, model: str | None, net: NetPolicy) -> Target:
        target = super().target(endpoint, auth, model, net)
        if any(name.lower() == "anthropic-version" for name in target.headers):
            return target
        return replace(target, headers={**target.headers, "anthropic-version": API_VERSION})

    async def relay_native(self, clients: HttpClients, target: Target, body: dict[str, Any],
                           request_id: str = "") -> Reply:
        return await clients.post(target, orjson.dumps(body), request_id)

    async def chat(self, clients: HttpClients, target: Target, body: dict[str, Any],
                   request_id: str = "") -> MessagesReply:
        reply = await clients.post(target, orjson.dumps(to_messages(body)), request_id)
        return MessagesReply(reply, target.net, target.label)
