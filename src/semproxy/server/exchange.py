"""The record of one request, filled in phase by phase, and what a phase answers with.

Every phase reads and writes the `Exchange`: enter sets the route, consumer
and parsed request; admit may add response headers and instance gates; route
sets the decision, candidates and first pick; call the attempts; relay the
status, usage and whether the answer was complete; account reads it all.
Nothing here holds secrets: headers are never copied in, and payloads only
when the route's `logging.payloads` asks for them.

A phase that ends the request early returns an `Answer` (a stored reply for
the relay to send); one that refuses raises a `GatewayError`, whose `headers`
go out with the error. Either way every phase's accounting still runs.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from semproxy.errors import GatewayError
from semproxy.governance.reservation import Reservation
from semproxy.governance.tiers import BudgetChoice
from semproxy.observability.observer import RequestObserver
from semproxy.protocols.contract import ClientProtocol, Converter, Parsed
from semproxy.runtime.legs import Leg, LegTable
from semproxy.runtime.routes import Candidates, RouteState
from semproxy.semantic.decision import Decision
from semproxy.transport.base import Reply
from semproxy.transport.target import NetPolicy
from semproxy.types import Usage

if TYPE_CHECKING:
    from semproxy.server.lookup import CacheVisit

MAX_REQUEST_ID = 128
DEFAULT_NET = NetPolicy()


@dataclass(slots=True)
class Attempt:
    instance: str
    outcome: str  # "ok", "http_503", "timeout", "connect", "reset"

    def describe(self) -> str:
        """How the attempt ended, in the words of the logs and the all-failed body."""
        kind, _, code = self.outcome.partition("_")
        return f"returned {code}" if kind == "http" else f"failed ({self.outcome})"


@dataclass(slots=True)
class Answer:
    """What the relay sends: an upstream's reply, or one a phase made (a cache hit).

    `speaks` reads the reply (its usage, and a stream's events into Chat
    Completions); `back` turns Chat Completions into the client's protocol
    (None: nothing to turn). `body` is the whole answer when it was read already
    (and read by `speaks`); None for a stream, or a stored answer not read yet.
    `usage_back`: `speaks` left the usage of `body` unread (it is the identity),
    so `back` reads it when it converts the body (see `Leg.usage_back`).
    """

    reply: Reply
    speaks: Converter
    back: Converter | None = None
    body: bytes | None = None
    content_type: str | None = None  # of a whole answer; None keeps the reply's
    net: NetPolicy = DEFAULT_NET  # bounds a stream's events in size and time
    label: str = "upstream"
    usage_back: bool = False


class StreamTap(Protocol):
    """Listens to a relayed stream (the response cache storing it, a budget counting it):
    registered on `Exchange.taps` before the relay; costs nothing while none is."""

    def events(self, data: bytes, protocol: str) -> None:
        """A run of complete events as the upstream sent them, in `protocol`."""

    def end(self, usage: Usage | None, complete: bool) -> None:
        """The stream ended: the usage it reported, whether its terminal event came."""


class InstanceGate(Protocol):
    """Keeps an instance out of one request's failover loop (an instance out of its own
    quota), the way an unhealthy one is: asked for each candidate before its attempt.
    A gate that refuses may set `Exchange.refusal`: the answer when no instance is left."""

    async def allows(self, exchange: Exchange, instance: str) -> bool: ...


class Exchange:
    """The record of one request (see the module docstring for who writes what).

    A plain class: the fields below are class-level defaults, and an instance holds
    only what was set on it, so a request pays for the fields it uses; `__init__`
    sets the few every request has.
    """

    route: RouteState | None = None
    consumer: str | None = None
    model: str | None = None  # as the client wrote it (never the configured one)
    parsed: Parsed | None = None
    body_size: int = 0  # of the client's request body, in bytes
    hash_key: str | None = None  # chash routes: the request's key
    decision: Decision | None = None
    shadow: Decision | None = None  # the shadow table's decision, when made inline
    legs: LegTable | None = None  # how each instance serves this request's protocol
    candidates: Candidates | None = None
    skip: Set[str] = frozenset()  # never tried: unhealthy, or unable to serve it
    pick: str | None = None  # the first candidate: the call starts there
    leg: Leg | None = None  # the leg of the answer being relayed
    source: str = "upstream"  # who answered: "upstream", or the phase that did
    status: int = 0
    ttft: float | None = None
    usage: Usage | None = None
    complete: bool = False  # a whole answer, or a stream whose terminal event came
    stream_error: str | None = None  # why a started stream did not end whole
    response_body: bytes | None = None  # as relayed (payload logging)
    headers: dict[str, str] | None = None  # added to every answer (rate-limit headers)
    taps: list[StreamTap] | None = None
    gates: list[InstanceGate] | None = None
    # Spend governance (server/admit.py): the request's holds, the answer when a gate
    # left no instance, the budget rule's choice on a semantic route, what it cost
    # (nanos; None: unpriced) and was charged, and the HTTP request for routes whose
    # limits read request variables (APISIX rules[].key; nothing else reads it).
    reservation: Reservation | None = None
    refusal: GatewayError | None = None
    budget: BudgetChoice | None = None
    cost: int | None = None
    charged: Usage | None = None  # what the budgets were charged (an estimate when marked)
    http: web.Request | None = None
    answer: Answer | None = None  # what the relay sent (set by the relay)
    # ai-cache routes: the request headers and variables the cache reads (taken by
    # enter, nothing else of the request's headers), and what the cache did.
    cache_headers: dict[str, str] | None = None
    cache_vars: dict[str, str] | None = None
    cache: CacheVisit | None = None

    def __init__(self, request_id: str, protocol: ClientProtocol,
                 observer: RequestObserver) -> None:
        self.request_id = request_id
        self.protocol = protocol
        self.observer = observer
        self.started = time.monotonic()
        self.attempts: list[Attempt] = []
        # Read by every request whether set or not: on the instance, a read is one step.
        self.decision = self.shadow = None
        self.gates = self.taps = self.headers = None

    @property
    def instance(self) -> str:
        return self.attempts[-1].instance if self.attempts else "-"

    @property
    def payload(self) -> dict[str, Any] | None:
        """The request as a Chat Completions (or embeddings) body."""
        return None if self.parsed is None else self.parsed.payload

    def end_user(self) -> str | None:
        """The end user the client names: OpenAI's `user`, Anthropic's `metadata.user_id`
        (the Messages parse maps it to `user`; a request only a native instance can take
        keeps it in its own body)."""
        parsed = self.parsed
        if parsed is None:
            return None
        user = parsed.payload.get("user")
        if isinstance(user, str):
            return user
        metadata = (parsed.native or {}).get("metadata")
        user = metadata.get("user_id") if isinstance(metadata, dict) else None
        return user if isinstance(user, str) else None


class _IdSource:
    """Fresh request ids: 16 random hex digits per process, then a 16-digit counter.

    As long as a uuid4 hex and as unique in practice (a collision needs two
    processes to draw the same 64-bit prefix), without a system call for random
    bytes on every request. A forked worker draws its own prefix.
    """

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.prefix = os.urandom(8).hex()
        self.counter = itertools.count(1)

    def next(self) -> str:
        return f"{self.prefix}{next(self.counter):016x}"


_ids = _IdSource()


def request_id(request: web.Request) -> str:
    """The client's X-Request-Id when it is a sane token, else a fresh one."""
    given = request.headers.get("X-Request-Id", "")
    if 0 < len(given) <= MAX_REQUEST_ID and given.isascii() and given.isprintable():
        return given
    return _ids.next()
