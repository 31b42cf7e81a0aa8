"""Errors the door reports to a caller, each with its HTTP status and wire code.

Everything a handler raises that is not a `DoorError` becomes a generic 500
`{"error": "internal"}` at the one boundary in `app.py`, so store internals and
stack traces never reach the wire.
"""

from __future__ import annotations

#: how much of an exception's first line goes into a log line or a job's failure reason
EXCEPTION_LINE_MAX_CHARS = 200


def exception_line(exc: BaseException, when_empty: str = "") -> str:
    """`<ClassName>: <its message's first line, clipped>` (`when_empty` if it has no message): one
    line for a log or a stored reason, never a traceback."""
    text = str(exc)
    first = text.splitlines()[0][:EXCEPTION_LINE_MAX_CHARS] if text else when_empty
    return f"{type(exc).__name__}: {first}"


def first_line(exc: BaseException, when_empty: str = "") -> str:
    """An exception's message, stripped, up to its first line break (`when_empty`, or its class
    name, when it has no message): a driver's error inside a sentence of ours."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else (when_empty or type(exc).__name__)


class DoorError(Exception):
    """A failure the caller can act on: `{error: code, message}` with `status`."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status


class InvalidRequest(DoorError):
    """The body or a parameter is missing, of the wrong type, or out of range."""

    status = 400
    code = "invalid_request"


class Unauthorized(DoorError):
    """No token, or a token that is unknown or revoked."""

    status = 401
    code = "unauthorized"


class Forbidden(DoorError):
    """A valid token that may not do this (e.g. aliases need an admin)."""

    status = 403
    code = "forbidden"


class NotFound(DoorError):
    """No such memory or job in the caller's team (existence is never revealed)."""

    status = 404
    code = "not_found"


class NoMatch(DoorError):
    """Forget found nothing to tombstone."""

    status = 404
    code = "no_match"


class Conflict(DoorError):
    """The request contradicts the stored state (a superseded version, a reused UUID)."""

    status = 409
    code = "conflict"


class TooLarge(DoorError):
    """The request body is over the size cap."""

    status = 413
    code = "body_too_large"


class UnsupportedMediaType(DoorError):
    """A request body that is not declared `application/json`."""

    status = 415
    code = "unsupported_media_type"


class RequestTimeout(DoorError):
    """The body did not arrive within the read deadline."""

    status = 408
    code = "request_timeout"


class StorageFull(DoorError):
    """The store's disk (or its configured size limit) is full: nothing can be written until there is room."""

    status = 503
    code = "storage_full"
