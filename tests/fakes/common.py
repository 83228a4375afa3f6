"""Shared plumbing for the fake HTTP servers used by the test suite.

Nothing here imports semproxy: the fakes speak plain HTTP over real sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import orjson
from aiohttp import web
from multidict import CIMultiDict

JSONHeaders = {"Content-Type": "application/json"}

_ERROR_TYPES: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "bad_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    404: ("not_found_error", "not_found"),
    408: ("timeout_error", "timeout"),
    413: ("invalid_request_error", "payload_too_large"),
    422: ("invalid_request_error", "unprocessable"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


@dataclass
class RecordedRequest:
    """One request as the fake server saw it."""

    method: str
    path: str
    query: dict[str, str]
    headers: CIMultiDict[str]
    json: Any
    body: bytes
    received_at: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


async def record_request(request: web.Request) -> RecordedRequest:
    body = await request.read()
    parsed: Any = None
    if body:
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:
            parsed = None
    return RecordedRequest(
        method=request.method,
        path=request.path,
        query=dict(request.query),
        headers=CIMultiDict(request.headers),
        json=parsed,
        body=body,
    )


def error_payload(status: int, message: str) -> dict[str, Any]:
    """An OpenAI-shaped error body for ``status``."""
    err_type, code = _ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", f"http_{status}")
    )
    return {"error": {"message": message, "type": err_type, "code": code, "param": None}}


def json_response(
    payload: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=orjson.dumps(payload), status=status, headers={**JSONHeaders, **(headers or {})}
    )


class FakeServer:
    """Base class: an aiohttp app on 127.0.0.1, ephemeral port, any method on any path.

    GET/HEAD answer ``200 {"status": "ok"}`` (health probes); POST goes to
    :meth:`handle` unless ``fail_next`` or ``default_status`` forces an error.
    """

    def __init__(self, name: str, host: str = "127.0.0.1", port: int = 0) -> None:
        self.name = name
        self.host = host
        self.requests: list[RecordedRequest] = []
        self.calls = 0
        self.default_status = 200
        self.fail_next: list[int] = []
        self._want_port = port
        self._port: int | None = None
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    # -- lifecycle ---------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError(f"fake server {self.name!r} is not started")
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> Self:
        if self._runner is not None:
            return self
        self._closing = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=0.5,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._want_port)
        await site.start()
        self._port = int(runner.addresses[0][1])
        self._runner = runner
        return self

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._closing.set()  # wake every hang/slow sleeper so handlers finish fast
        await runner.cleanup()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- helpers for tests -------------------------------------------------

    @property
    def last_request(self) -> RecordedRequest:
        if not self.requests:
            raise AssertionError(f"fake server {self.name!r} received no requests")
        return self.requests[-1]

    @property
    def posts(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST"]

    def reset(self) -> None:
        """Forget recorded traffic and forced failures."""
        self.requests.clear()
        self.calls = 0
        self.fail_next.clear()
        self.default_status = 200

    # -- request handling --------------------------------------------------

    async def sleep(self, seconds: float) -> bool:
        """Sleep, but wake early on shutdown. Returns False if woken by shutdown."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), timeout=seconds)
            return False
        return True

    def error(self, status: int, message: str) -> web.Response:
        return json_response(
            error_payload(status, f"[{self.name}] {message}"), status, self.extra_headers()
        )

    def extra_headers(self) -> dict[str, str]:
        return {}

    def forced_status(self) -> int | None:
        if self.fail_next:
            return self.fail_next.pop(0)
        if self.default_status != 200:
            return self.default_status
        return None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        rec = await record_request(request)
        self.requests.append(rec)
        if request.method in ("GET", "HEAD"):
            return json_response({"status": "ok", "name": self.name}, 200, self.extra_headers())
        self.calls += 1
        status = self.forced_status()
        if status is not None and status != 200:
            return self.error(status, f"forced status {status}")
        return await self.handle(request, rec)

    async def handle(self, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        raise NotImplementedError
