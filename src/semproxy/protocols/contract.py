"""What every inbound protocol provides to the request path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from semproxy.errors import BadRequestError
from semproxy.semantic.query import RoutingInput


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


class StreamTranslator(Protocol):
    """Turns an upstream Chat Completions event stream into a protocol's events."""

    def feed(self, chunk: bytes) -> bytes:
        """The protocol's bytes for this upstream chunk (possibly none yet)."""

    def close(self) -> bytes:
        """The closing events once the upstream stream ended normally."""

    def error(self, message: str) -> bytes:
        """An in-stream error event, for an upstream that broke mid-stream."""


class ClientProtocol(Protocol):
    """One inbound protocol: request in, answer and errors out, in its own shapes."""

    name: str  # the `protocol` label of metrics and access-log lines

    def parse(self, body: bytes) -> Parsed: ...

    def reply(self, body: bytes) -> bytes:
        """A successful upstream answer (Chat Completions JSON) in this protocol."""

    def stream(self, model: str | None) -> StreamTranslator | None:
        """A translator for a streamed answer; None relays the upstream bytes as they are."""

    def error(self, status: int, message: str, type_: str, code: str | None) -> bytes:
        """An error body in this protocol's shape."""
