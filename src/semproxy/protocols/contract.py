"""What every client protocol and every converter provides to the request path.

A client protocol (`ClientProtocol`) parses a request into the gateway's terms
(`Parsed`: a Chat Completions body, the user's words) and renders errors in its
own shape. A converter (`Converter`) carries requests from one protocol to
another and their answers back, whole or streamed (`EventConverter`), and
reports the token usage it read on the way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from semproxy.errors import BadRequestError
from semproxy.protocols.events import DEFAULT_LIMIT
from semproxy.semantic.query import RoutingInput
from semproxy.types import JSONObject, Usage


@dataclass(slots=True)
class Parsed:
    """A client request in the gateway's terms.

    `payload` is what goes upstream (a Chat Completions body, or an embeddings
    body); `query` holds the user's own words that semantic routing compares,
    None for a request that is not routed on meaning (embeddings). `native` is the
    client's own body when an instance speaking the same protocol may take it
    as it is; `unsupported` says why it has no Chat Completions form (payload
    is then empty and only such native instances can serve it).
    """

    payload: dict[str, Any]
    query: RoutingInput | None
    native: dict[str, Any] | None = None
    unsupported: BadRequestError | None = None


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
