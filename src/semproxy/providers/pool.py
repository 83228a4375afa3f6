"""aiohttp's connection pool with one guard added: an idle connection that speaks is dropped.

HTTP/1.1 has no request ids: an answer belongs to whichever request is
outstanding on its connection. If an upstream sends bytes while its
connection sits idle in the pool (the tail of a broken answer, a second
answer nobody asked for), aiohttp would parse them and hand them to the next
request that borrows the connection, from an unrelated client. The guard
closes such a connection the moment the bytes arrive, so it is never reused.

Doing that needs two aiohttp internals: the connector's `_release` (where a
connection goes back to the pool) and its `_factory` (which builds the
protocol object of each connection). `check_aiohttp` verifies both when the
client starts, so an aiohttp upgrade that changes them fails loudly instead of
silently losing the guard.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from aiohttp import TCPConnector
from aiohttp.client_proto import ResponseHandler


class GuardedHandler(ResponseHandler):
    """The protocol of one upstream connection, closed on bytes received while idle."""

    is_idle = False

    def set_response_params(self, **params: Any) -> None:
        self.is_idle = False  # a request is going out on this connection
        super().set_response_params(**params)

    def data_received(self, data: bytes) -> None:
        if self.is_idle and data:
            self.drop()
            return
        super().data_received(data)

    def drop(self) -> None:
        """Close for good: the pool sees a closed connection and never hands it out."""
        self._should_close = True
        if self.transport is not None:
            self.transport.close()


class GuardedConnector(TCPConnector):
    """A TCPConnector whose pooled connections are `GuardedHandler`s marked idle."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._factory = functools.partial(GuardedHandler, loop=self._loop)  # type: ignore[assignment]

    def _release(self, key: Any, protocol: ResponseHandler, *, should_close: bool = False
                 ) -> None:
        super()._release(key, protocol, should_close=should_close)
        if isinstance(protocol, GuardedHandler) and protocol.transport is not None:
            protocol.is_idle = True  # it went back to the pool (a closed one has no transport)


def check_aiohttp(connector: type[TCPConnector] = TCPConnector,
                  handler: type[ResponseHandler] = ResponseHandler) -> None:
    """Raise if the aiohttp internals the guard relies on are not what it expects."""
    problems = []
    release = getattr(connector, "_release", None)
    if release is None or list(inspect.signature(release).parameters) != [
            "self", "key", "protocol", "should_close"]:
        problems.append("TCPConnector._release(key, protocol, *, should_close)")
    sources = "".join(inspect.getsource(vars(cls)["__init__"]) for cls in connector.__mro__
                      if "__init__" in vars(cls) and cls is not object)
    if "self._factory = " not in sources:
        problems.append("BaseConnector._factory (the protocol factory)")
    for method in ("set_response_params", "data_received"):
        if not callable(getattr(handler, method, None)):
            problems.append(f"ResponseHandler.{method}")
    if problems:
        raise RuntimeError(
            "semproxy's upstream client needs aiohttp internals that this aiohttp version "
            f"changed: {', '.join(problems)}. Install the aiohttp pinned in constraints.txt.")
