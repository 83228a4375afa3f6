"""What every client protocol and every converter provides to the request path.

A client protocol (`ClientProtocol`) parses a request into the gateway's terms
(`Parsed`: a Chat Completions body, the user's words) and renders errors in its
own shape. A converter (`Converter`) carries requests from one protocol to
another and their answers back, whole or streamed (`EventConverter`), and
reports the token usage it read on the way.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

from semproxy.errors import BadRequestError
from semproxy.protocols.events import DEFAULT_LIMIT
from semproxy.semantic.query import RoutingInput
from semproxy.types import JSONObject, Usage


class Parsed:
    """A client request in the gateway's terms.

    `payload` is what goes upstream (a Chat Completions body, or an embeddings
    body); `query` holds the user's own words that semantic routing compares,
    None for a request that is not routed on meaning (embeddings). `native` is the
    client's own body when an instance speaking the same protocol may take it
    as it is; `unsupported` says why it has no Chat Completions form (payload
    is then empty and only such native instances can serve it).

    While its upstream call is in flight a big request is kept as JSON bytes
    (`shelve`): as Python objects a body of many small messages takes six to ten
    times its size, and nothing reads it until the call ends or fails over.
    Reading `payload` or `native` parses it back (and keeps it parsed).
    """

    __slots__ = ("_native", "_payload", "_shelf", "query", "unsupported")

    def __init__(self, payload: dict[str, Any], query: RoutingInput | None,
                 native: dict[str, Any] | None = None,
                 unsupported: BadRequestError | None = None) -> None:
        self._payload: dict[str, Any] | None = payload
        self._native = native
        self._shelf: tuple[bytes, bytes | None] | None = None
        self.query = query
        self.unsupported = unsupported

    @property
    def payload(self) -> dict[str, Any]:
        if self._shelf is not None:
            self._unshelve()
        assert self._payload is not None
        return self._payload

    @property
    def native(self) -> dict[str, Any] | None:
        if self._shelf is not None:
            self._unshelve()
        return self._native

    @property
    def shelved(self) -> bool:
        return self._shelf is not None

    def payload_json(self) -> bytes:
        """`payload` as JSON, without parsing a shelved one back."""
        return self._shelf[0] if self._shelf is not None else orjson.dumps(self.payload)

    def shelve(self) -> None:
        """Keep the bodies as JSON bytes until they are read again (a body orjson cannot
        write stays as it is). `native` sharing `payload`, as Chat's does, is kept once."""
        payload, native = self._payload, self._native
        if self._shelf is not None or payload is None:
            return
        try:
            shelf = (exact(orjson.dumps(payload)),
                     None if native is None or native is payload else exact(orjson.dumps(native)))
        except TypeError:  # orjson.JSONEncodeError is one
            return
        self._shelf = shelf
        self._payload = None
        self._native = _SAME if native is payload else None

    def _unshelve(self) -> None:
        assert self._shelf is not None
        payload, native = self._shelf
        self._shelf = None
        self._payload = orjson.loads(payload)
        if self._native is _SAME:
            self._native = self._payload
        elif native is not None:
            self._native = orjson.loads(native)


_SAME: dict[str, Any] = {}  # `native` was `payload` when it was shelved


def exact(data: bytes) -> bytes:
    """`data` in a buffer of its own size: orjson leaves the spare capacity of its output
    buffer allocated (up to twice the length), which a big body held during an upstream
    call should not keep."""
    return bytes(memoryview(data))


class ClientProtocol(Protocol):
    """One inbound protocol: its requests in, its errors out."""

    name: str  # the `protocol` label of metrics and access-log lines

    def parse(self, body: bytes) -> Parsed: ...

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        """An error body in this protocol's shape."""


class EventConverter(Protocol):
    """One streamed answer's events, from a converter's target protocol to its source's.

    `usage` is what the events read so far reported (None before any count);
    `done` turns true once the stream's terminal event was seen; `failed` once an
    error event ended it (the upstream's own, or one the converter wrote).
    """

    @property
    def usage(self) -> Usage | None: ...

    @property
    def done(self) -> bool: ...

    @property
    def failed(self) -> bool: ...

    def feed(self, events: bytes) -> bytes:
        """The source protocol's bytes for a run of complete events (possibly none yet)."""

    def close(self) -> bytes:
        """The closing events once the upstream stream ended normally."""

    def error(self, message: str) -> bytes:
        """An in-stream error event, for an upstream that broke mid-stream."""


class Converter(Protocol):
    """Requests from `source` to `target`, and their answers back from `target` to `source`.

    An identity converter (`source == target`) changes nothing and only reads the
    usage of the answers it is given.
    """

    source: str
    target: str

    def request(self, body: JSONObject) -> JSONObject: ...

    def answer(self, body: bytes) -> tuple[bytes, Usage | None]:
        """A successful whole answer in the source protocol, and the usage it reported.
        Raises `UpstreamError` for a body that is not an answer of the target protocol."""

    def error(self, status: int, body: bytes) -> bytes:
        """An upstream error body (status >= 400) in the source protocol's shape."""

    def events(self, model: str | None, limit: int = DEFAULT_LIMIT) -> EventConverter:
        """A converter for one streamed answer; `model` is the one the client asked for
        (the upstream's own wins when it names one), `limit` the bytes it may hold."""
