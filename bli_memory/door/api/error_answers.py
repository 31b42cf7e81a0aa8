"""How the door answers a failure: always `{error, message}` with the right status, never a stack trace.

`install_error_handlers` puts one handler per kind of failure on the app: a `DoorError` (the one tree
the service and the stores raise, a full, damaged or unreachable store included: each store maps its
driver's errors into it), Starlette's own 404/405, a body that fails validation, and anything
unexpected (a generic 500). `error_responses` documents those answers on each route of
`/openapi.json`, with `ErrorBody` as their schema.
"""

from __future__ import annotations

import sys
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from bli_memory.door.errors import DoorError


class ErrorBody(BaseModel):
    """Every error the door answers: a stable code and one sentence for a person."""

    error: str = Field(examples=["invalid_request"])
    message: str = Field(examples=["limit: Input should be less than or equal to 100"])


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route that can answer these error statuses, each with its codes."""
    meaning = {
        400: "invalid_request: a missing, wrong-typed or out-of-range field, malformed JSON",
        401: "unauthorized: missing, unknown or revoked token",
        403: "forbidden: the token may not do this; host_not_allowed / cross_origin: a foreign Host or Origin",
        404: "not_found / no_match: unknown id (also another team's), or nothing close enough",
        409: "not_current / not_pinned / conflict",
        408: "request_timeout: the body did not arrive in time",
        413: "body_too_large: over 1 MiB",
        415: "unsupported_media_type: a body not sent as application/json",
        429: "queue_full: the device has as many extract jobs waiting as it may (extract: true)",
        502: "insert_failed",
        503: "storage_full: the store's disk or size limit is full; nothing was written. "
        "store_unavailable: the database server cannot be reached right now (try again). "
        "store_damaged: the database was found damaged while served; no write is taken, reads go on",
    }
    return {status: {"model": ErrorBody, "description": meaning[status]} for status in statuses}


#: what any route with a body can answer; WRITES adds a full, damaged or unreachable store.
COMMON = (400, 401, 403, 408, 413, 415)
WRITES = (*COMMON, 503)


def install_error_handlers(api: FastAPI) -> None:
    """Answer every failure on `api` as `{error, message}`; an error that carries a `log_line` (a
    store's failure, naming the store; a damaged store once, when the damage is found) is also said
    on stderr."""

    @api.exception_handler(DoorError)
    async def door_error(_: Request, exc: DoorError) -> JSONResponse:
        if exc.log_line:  # a store's failure: said once, naming the store (the caller's answer does not)
            sys.stderr.write(exc.log_line + "\n")
        return JSONResponse({"error": exc.code, "message": exc.message}, status_code=exc.status)

    @api.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed"}
        message = "no such endpoint" if exc.status_code == 404 else str(exc.detail)
        return JSONResponse(
            {"error": codes.get(exc.status_code, f"http_{exc.status_code}"), "message": message},
            status_code=exc.status_code,
        )

    @api.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            {"error": "invalid_request", "message": describe_validation(exc.errors())}, status_code=400
        )

    @api.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        sys.stderr.write(f"bli-memory-door internal error: {type(exc).__name__}\n")
        return JSONResponse({"error": "internal", "message": "the door failed; see its log"}, status_code=500)


def describe_validation(errors: Any) -> str:
    """One readable sentence from pydantic's error list: `field: problem; field: problem`."""
    parts = []
    for error in list(errors)[:5]:
        location = [str(item) for item in error.get("loc", ()) if item not in ("body",)]
        where = ".".join(location) or "body"
        kind = error.get("type", "")
        if kind == "json_invalid":
            parts.append("the body is not valid JSON")
        elif kind == "missing":
            parts.append(f"{where} is required")
        else:
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(message if kind == "value_error" and where == "body" else f"{where}: {message}")
    return "; ".join(parts) or "invalid request"
