"""Legs: how one instance serves one client protocol, worked out once per config version.

A leg names the target the request goes to and the converters on the way:
`speaks` turns the gateway's request into the upstream's protocol and reads
the upstream's answers (usage included) back into Chat Completions, or is the
identity when the instance speaks the client's protocol itself (`native`: the
client's own body goes as it is); `back` turns Chat Completions into the
client's protocol (None when the client speaks Chat, or the leg is native).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from semproxy.config.spec import InstanceSpec
from semproxy.errors import BadRequestError
from semproxy.protocols.chat import CHAT
from semproxy.protocols.contract import Converter, Parsed
from semproxy.protocols.count_tokens import COUNT_TOKENS, LOCAL_URL
from semproxy.protocols.embeddings import EMBEDDINGS
from semproxy.protocols.envelope import UNTRANSLATABLE
from semproxy.protocols.registry import CONVERTERS, PROTOCOLS, conversion
from semproxy.transport.target import Target

JSON = "application/json"


@dataclass(frozen=True, slots=True, kw_only=True)
class Leg:
    instance: str
    target: Target
    native: bool
    speaks: Converter
    back: Converter | None
    options: Mapping[str, Any]  # the instance's `options`: they overwrite body keys
    sends_model: bool
    # The Content-Type of a whole answer: None keeps the upstream's (a Chat client,
    # or a native one, gets the bytes the upstream sent), else JSON.
    content_type: str | None
    # `speaks` is the identity and `back` converts: a whole answer's usage is read by
    # `back`, in the one parse that converts it, not by the identity first.
    usage_back: bool = False

    def body(self, parsed: Parsed) -> bytes:
        """The request body this leg sends for `parsed`; a 400 when the client's request
        has a field of a shape the upstream's protocol cannot be given."""
        source = parsed.native if self.native and parsed.native is not None else parsed.payload
        body = {**source, **self.options}
        if not self.sends_model:
            body.pop("model", None)
        try:
            return orjson.dumps(self.speaks.request(body))
        except UNTRANSLATABLE as exc:  # orjson's encode error is a TypeError too
            raise BadRequestError("the request has a field of a shape the upstream's protocol "
                                  "does not take") from exc


@dataclass(frozen=True, slots=True)
class LegTable:
    """The legs of a route's instances for one client protocol."""

    legs: Mapping[str, Leg]
    unable: frozenset[str]  # instances that cannot serve this protocol at all
    not_native: frozenset[str]  # instances that would need a conversion


def leg(instance: InstanceSpec, client: str) -> Leg | None:
    """The leg of `instance` for clients of `client`, None when it cannot serve them.

    An instance speaking the client's protocol takes it natively; otherwise the
    first protocol it speaks that Chat Completions converts to serves. Token
    counting needs no model: an instance that cannot count is counted for, in
    process (`protocols/count_tokens.py`).
    """
    spoken = sorted(instance.targets, key=lambda p: p != client)  # its own protocol first
    for protocol in spoken:
        found = conversion(client, protocol)
        if found is None:
            continue
        speaks, back = found
        native = protocol == client
        # Chat clients and native Messages clients get the upstream's bytes with its
        # Content-Type; every other answer (embeddings ones too) is labelled JSON.
        keeps_type = client == CHAT or (native and client != EMBEDDINGS)
        return Leg(instance=instance.name, target=instance.targets[protocol], native=native,
                   speaks=speaks, back=back, options=instance.options,
                   sends_model=instance.provider.sends_model,
                   content_type=None if keeps_type else JSON,
                   usage_back=back is not None and speaks.source == speaks.target)
    if client == COUNT_TOKENS:
        local = Target(url=LOCAL_URL, headers={}, net=instance.target.net,
                       label="local token count")
        return Leg(instance=instance.name, target=local, native=True,
                   speaks=CONVERTERS[(COUNT_TOKENS, COUNT_TOKENS)], back=None,
                   options=instance.options, sends_model=True, content_type=None)
    return None


def leg_tables(instances: tuple[InstanceSpec, ...]) -> dict[str, LegTable]:
    """Client protocol name -> the legs of every instance that can serve it."""
    tables = {}
    for client in PROTOCOLS:
        found = {i.name: found for i in instances if (found := leg(i, client)) is not None}
        names = frozenset(i.name for i in instances)
        tables[client] = LegTable(found, names - found.keys(),
                                  frozenset(n for n, g in found.items() if not g.native) |
                                  (names - found.keys()))
    return tables
