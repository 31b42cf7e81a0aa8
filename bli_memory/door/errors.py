"""Errors the door reports to a caller, each with its HTTP status and wire code: one tree under
`DoorError`.

The stores raise theirs from this tree too (`StoreError`: full, damaged, unavailable; `QueueFull`,
`DeviceRevoked`), mapping their drivers' errors at their own boundary, so the app answers every
one the same way: `{"error": code, "message": message}` with `status`, and `log_line` once on
stderr when it has one. Everything a handler raises that is not a `DoorError` becomes a generic 500
`{"error": "internal"}` at the one boundary in `door/api/error_answers.py`, so store internals and stack traces never
reach the wire.
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

    #: what the door says on its stderr when this error reaches the app (one line, without its
    #: break), or None: most errors are the caller's business alone
    log_line: str | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        log_line: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if log_line is not None:
            self.log_line = log_line
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


class DeviceRevoked(Unauthorized):
    """The device was revoked after its request was authenticated (a store found it so inside the
    write): the same 401 as a token that is unknown or revoked. `str()` names the device."""

    def __init__(self, device_id: str) -> None:
        super().__init__("the token is unknown or revoked")
        self.device_id = device_id

    def __str__(self) -> str:
        return self.device_id


class QueueFull(DoorError):
    """The device already has as many extraction jobs waiting as the store allows: 429 until some
    are done. `str()` says how many wait."""

    status = 429
    code = "queue_full"

    def __init__(self, pending: int) -> None:
        super().__init__(
            f"this device has {pending} extract jobs waiting, the most it may have; "
            "save again when some are done"
        )
        self.pending = pending

    def __str__(self) -> str:
        return f"{self.pending} extraction jobs waiting"


class StoreError(DoorError):
    """The store failed a call for a reason of its own (disk, damage, server), raised by the store
    at its boundary in place of its driver's error. `message` is what the caller is told (one per
    kind: no path, no driver text); `str()` is the store's own detail, for logs and /healthz."""

    status = 503
    #: what the caller is told
    answer = "the door's store failed"

    def __init__(self, detail: str, *, log_line: str | None = None) -> None:
        super().__init__(self.answer, log_line=log_line)
        self.detail = detail

    def __str__(self) -> str:
        return self.detail


class StoreFull(StoreError):
    """No room to write: the store's disk, or its size limit, is full. The failed write left nothing
    behind (its transaction was rolled back); reads go on working."""

    code = "storage_full"
    answer = "the store is full (no space left for the database); nothing was written"

    def __init__(self, detail: str, *, store: str | None = None) -> None:
        super().__init__(
            detail,
            log_line=None
            if store is None
            else f"bli-memory-door storage full: could not write to {store} ({detail}); "
            "free space on its disk — writes answer 503 storage_full until then",
        )


class StoreDamaged(StoreError):
    """The store's data was found damaged while the door served it: every write is refused from
    then on (nothing was written by this one); reads go on working. `log_line` is set on the one
    error that found the damage (said once, never per refused write)."""

    code = "store_damaged"
    answer = (
        "the door's database is damaged; it takes no more writes (nothing was written by this "
        "request) and still answers the reads it can. See 'A damaged database' in docs/door-operations.md"
    )


class StoreUnavailable(StoreError):
    """The store cannot answer right now: its server restarted or went away, a connection dropped,
    or a deadline passed. The failed call's transaction wrote nothing; a later call may work."""

    code = "store_unavailable"
    answer = (
        "the door cannot reach its database right now; nothing was written by this request. Try again shortly"
    )

    def __init__(self, detail: str, *, store: str | None = None) -> None:
        super().__init__(
            detail,
            log_line=None if store is None else f"bli-memory-door store unavailable: {store} ({detail})",
        )
