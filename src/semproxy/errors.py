"""The gateway's exception tree and the one place that renders OpenAI-shaped errors.

Every error a client can see is a GatewayError subclass carrying its HTTP status
and OpenAI error `type`/`code`. Foreign exceptions (aiohttp, orjson, pydantic)
are translated at the boundary with ``raise ... from exc`` so the handler only
ever sees this tree.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson


class GatewayError(Exception):
    """Base of every client-visible error; `headers` go out with its answer (a
    refusal's `Retry-After`, the debug headers of a request no instance served)."""

    status = 500
    type = "server_error"
    code = "internal_error"

    def __init__(self, message: str, public: str | None = None,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        # What a client may read when `message` names parts of the deployment
        # (instance labels, addresses): the reason alone.
        self.public = public
        self.headers = headers

    def body(self) -> bytes:
        return error_body(self.message, self.type, self.code)


class BadRequestError(GatewayError):
    status = 400
    type = "invalid_request_error"
    code = "invalid_request"


class UnauthorizedError(GatewayError):
    status = 401
    type = "invalid_request_error"
    code = "invalid_api_key"


class ForbiddenError(GatewayError):
    status = 403
    type = "invalid_request_error"
    code = "forbidden"


class NotFoundError(GatewayError):
    status = 404
    type = "invalid_request_error"
    code = "not_found"


class MethodNotAllowedError(GatewayError):
    status = 405
    type = "invalid_request_error"
    code = "method_not_allowed"


class RequestTimeoutError(GatewayError):
    status = 408
    type = "invalid_request_error"
    code = "request_timeout"


class ConflictError(GatewayError):
    """The request cannot be carried out on the resource as it is now (409)."""

    status = 409
    type = "invalid_request_error"
    code = "conflict"


class PayloadTooLargeError(GatewayError):
    status = 413
    type = "invalid_request_error"
    code = "request_too_large"


class UpstreamError(GatewayError):
    """The upstream could not be reached or answered with garbage."""

    status = 502
    type = "upstream_error"
    code = "bad_gateway"
    # The upstream may have received the request (and may bill it): re-sending it
    # elsewhere is the route's failover policy to decide.
    may_have_arrived = True


class UpstreamTimeoutError(UpstreamError):
    status = 504
    code = "upstream_timeout"


class UpstreamConnectError(UpstreamError):
    """No connection could be made (refused, unresolvable, TLS handshake failed)."""

    may_have_arrived = False


class UpstreamConnectTimeoutError(UpstreamTimeoutError):
    """No connection within the timeout: nothing was sent."""

    may_have_arrived = False


class UnavailableError(GatewayError):
    status = 503
    type = "server_error"
    code = "service_unavailable"


class ConfigError(Exception):
    """A config that cannot be loaded; `errors` holds one "path: message" per problem."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


class EmbeddingError(Exception):
    """Anything that went wrong while embedding; semantic routing fails open on it.

    `reason` is the machine-readable fallback reason reported to operators.
    """

    def __init__(self, message: str, reason: str = "embedding_error") -> None:
        super().__init__(message)
        self.reason = reason


def error_body(message: str, type_: str, code: str | None) -> bytes:
    """The OpenAI error envelope: {"error": {"message", "type", "param", "code"}}."""
    return orjson.dumps({"error": {"message": message, "type": type_, "param": None, "code": code}})


class ConfigRejected(BadRequestError):
    """A config document (admin PUT, playground Apply) that does not validate: 400
    with every error, each naming its field path."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("invalid config: " + "; ".join(errors))
        self.errors = errors

    def body(self) -> bytes:
        return orjson.dumps({"error": {"message": self.message, "type": self.type,
                                       "param": None, "code": "invalid_config",
                                       "errors": self.errors}})
