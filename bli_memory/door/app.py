"""The door's HTTP API: validation, authentication and the `{error, message}` shape, over a store.

FastAPI gives the OpenAPI document (`/openapi.json`) and body validation from the models below; this
module turns every failure — a validation error, malformed JSON, a body over the cap, a store error, an
unexpected exception — into `{error, message}` with the right status and never a stack trace. Handlers
are plain functions: FastAPI runs them in its thread pool, and the store serialises writes itself.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)
from starlette.exceptions import HTTPException as StarletteHTTPException

from bli_memory import __version__
from bli_memory.door.errors import DoorError, InvalidRequest, TooLarge, Unauthorized
from bli_memory.door.model import MAX_CONTENT_CHARS, MAX_LIMIT, MAX_TAG_CHARS, Principal, now_s, parse_iso
from bli_memory.door.store.sqlite import SqliteStore

MAX_BODY_BYTES = 1024 * 1024
MAX_QUERY_CHARS = 10_000
MAX_REASON_CHARS = 500
#: how far ahead of the door's clock a client's `createdAt` may be (clock skew), in seconds.
CREATED_AT_SKEW_S = 300.0
EXPERIENCE_WINDOW_DAYS = (7, 30)
EXPERIENCE_LAST_REASONS = 5

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# ---------------------------------------------------------------------------- request bodies

_STRICT = ConfigDict(strict=True, extra="ignore")
Tag = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG_CHARS)]
Content = Annotated[StrictStr, Field(min_length=1, max_length=MAX_CONTENT_CHARS)]
Number = StrictFloat | StrictInt


#: metadata is echoed back on every search: bound it so one row cannot poison a space's answers.
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 16
#: fields that name something and must hold more than whitespace.
_NAMED_FIELDS = ("containerTag", "alias", "canonical", "customId", "content", "reason")


class _Body(BaseModel):
    """Checks every request body shares: text must be valid Unicode (a lone surrogate would be stored
    but could never be sent back), names must not be blank, metadata must be plain bounded JSON."""

    @model_validator(mode="after")
    def _check(self) -> _Body:
        for name, value in self:
            if isinstance(value, str):
                _valid_unicode(name, value)
                if name in _NAMED_FIELDS and not value.strip():
                    raise ValueError(f"{name} must not be blank")
        metadata = getattr(self, "metadata", None)
        if metadata is not None:
            _check_metadata(metadata)
        return self


def _valid_unicode(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name} is not valid Unicode (a lone surrogate)") from None


def _depth(value: Any, limit: int) -> int:
    if limit < 0:
        return 0
    if isinstance(value, dict):
        return 1 + max((_depth(item, limit - 1) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item, limit - 1) for item in value), default=0)
    return 0


def _check_metadata(metadata: dict[str, Any]) -> None:
    if _depth(metadata, MAX_METADATA_DEPTH + 1) > MAX_METADATA_DEPTH:
        raise ValueError(f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels")
    try:
        encoded = json.dumps(metadata, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a ValueError too: test it first
        raise ValueError("metadata is not valid Unicode (a lone surrogate)") from None
    except ValueError:
        raise ValueError("metadata must be plain JSON (no NaN or Infinity)") from None
    if len(encoded) > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is larger than {MAX_METADATA_BYTES} bytes")


class SearchBody(_Body):
    model_config = _STRICT
    q: Annotated[StrictStr, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    containerTag: Tag
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)] = 5
    threshold: Annotated[Number, Field(ge=0, le=1)] = 0.0


class SaveBody(_Body):
    model_config = _STRICT
    content: Content
    containerTag: Tag
    customId: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG_CHARS)] | None = None
    extract: StrictBool = False
    metadata: dict[str, Any] | None = None
    createdAt: StrictStr | None = None
    kind: Literal["memory", "document"] = "memory"


class UpdateBody(_Body):
    model_config = _STRICT
    id: Annotated[StrictStr, Field(min_length=1, max_length=100)]
    content: Content


class ForgetBody(_Body):
    model_config = _STRICT
    containerTag: Tag
    id: Annotated[StrictStr, Field(min_length=1, max_length=100)] | None = None
    content: Content | None = None
    query: Annotated[StrictStr, Field(min_length=1, max_length=MAX_QUERY_CHARS)] | None = None


class ProfileBody(_Body):
    model_config = _STRICT
    containerTag: Tag
    q: Annotated[StrictStr, Field(max_length=MAX_QUERY_CHARS)] | None = None


class AliasBody(_Body):
    model_config = _STRICT
    alias: Tag
    canonical: Tag


class ExperienceBody(_Body):
    model_config = _STRICT
    id: Annotated[StrictStr, Field(max_length=36)] | None = None
    store: Literal["bli", "supermemory", "both"]
    verdict: Literal["win", "loss", "noise"]
    reason: Annotated[StrictStr, Field(min_length=1, max_length=MAX_REASON_CHARS)]
    created_at: StrictStr | None = None

    @model_validator(mode="after")
    def _entry(self) -> ExperienceBody:
        if self.id is not None:
            import uuid

            try:
                parsed = uuid.UUID(self.id)
            except ValueError:
                raise ValueError("id must be a UUID (8-4-4-4-12 hex digits)") from None
            if str(parsed) != self.id.lower() or parsed.int == 0:
                raise ValueError("id must be a UUID (8-4-4-4-12 hex digits)")
        if len(self.reason.splitlines()) != 1 or any(char in self.reason for char in "\u2028\u2029\x85"):
            raise ValueError("reason must be one line")
        return self


class ErrorBody(BaseModel):
    """Every error the door answers: a stable code and one sentence for a person."""

    error: str = Field(examples=["invalid_request"])
    message: str = Field(examples=["limit: Input should be less than or equal to 100"])


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    meaning = {
        400: "invalid_request: a missing, wrong-typed or out-of-range field, malformed JSON",
        401: "unauthorized: missing, unknown or revoked token",
        403: "forbidden: the token may not do this",
        404: "not_found / no_match: unknown id (also another team's), or nothing close enough",
        409: "not_current / conflict",
        413: "body_too_large: over 1 MiB",
        429: "queue_full: the device has as many extract jobs waiting as it may (extract: true)",
        502: "insert_failed",
    }
    return {status: {"model": ErrorBody, "description": meaning[status]} for status in statuses}


_COMMON = (400, 401, 413)


# ---------------------------------------------------------------------------- middleware


class BodyLimit:
    """Refuse a request body over `limit` bytes with 413, whether it says its length or streams it.

    Starlette would read any size into memory before validation; this counts bytes as they arrive.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = []
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await _send_error(send, TooLarge(f"the body is larger than {self.limit} bytes"))
                return
            if name != b"content-type":
                headers.append((name, value))
        # Every body of this API is JSON; a client that forgot the header (curl -d) still means JSON.
        headers.append((b"content-type", b"application/json"))
        scope["headers"] = headers  # in place: the request log reads the route the router records
        received = 0
        refused = False

        async def limited_receive() -> MutableMapping[str, Any]:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    # Answer now; whatever the app makes of the cut-off body is dropped below.
                    refused = True
                    await _send_error(send, TooLarge(f"the body is larger than {self.limit} bytes"))
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: MutableMapping[str, Any]) -> None:
            if not refused:
                await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not refused:
                raise


async def _send_error(send: Send, error: DoorError) -> None:
    body = json.dumps({"error": error.code, "message": error.message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequestLog:
    """One stderr line per request: method, route path, status, milliseconds. Never a token or a body."""

    def __init__(self, app: ASGIApp, stream: Any = None) -> None:
        self.app = app
        self.stream = stream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording_send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        started_response = False

        async def guarded_send(message: MutableMapping[str, Any]) -> None:
            nonlocal started_response
            if message["type"] == "http.response.start":
                started_response = True
            await recording_send(message)

        failure = ""
        try:
            await self.app(scope, receive, guarded_send)
        except Exception as exc:
            # Starlette answers 500 through our handler, then re-raises for the server to log a
            # traceback; stop it here: one line, and a JSON 500 if nothing was sent yet.
            failure = f" internal error {type(exc).__name__}"
            if not started_response:
                status = 500
                await _send_error(
                    send, DoorError("the door failed; see its log", code="internal", status=500)
                )
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            stream = self.stream or sys.stderr
            stream.write(
                f"bli-memory-door {scope.get('method', '?')} {_route_of(scope)} {status} {elapsed_ms:.1f}ms{failure}\n"
            )
            stream.flush()


def _route_of(scope: Scope) -> str:
    """The matched route's template (`/api/memory/{memory_id}/history`), never the raw path: a path
    is the caller's text (it could forge log lines or carry a pasted token)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "(no route)"


# ---------------------------------------------------------------------------- the app


_BEARER = HTTPBearer(auto_error=False, description="A device token from `bli-memory-door pair`.")


async def _principal(  # async: a sync dependency costs a thread-pool round trip per request (~3 ms)
    request: Request, declared: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)] = None
) -> Principal:
    """The caller behind `Authorization: Bearer <token>`; 401 for a missing, unknown or revoked token."""
    del declared  # only declares the bearer scheme in /openapi.json; the header is read as sent
    authorization = request.headers.get("authorization")
    if not authorization:
        raise Unauthorized("missing Authorization: Bearer token")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be `Bearer <token>`")
    found: Principal | None = request.app.state.store.authenticate(token.strip())
    if found is None:
        raise Unauthorized("the token is unknown or revoked")
    return found


Caller = Annotated[Principal, Depends(_principal)]


def create_app(
    store: SqliteStore,
    *,
    embedder_name: str = "none",
    extract_enabled: bool = False,
    on_job_queued: Callable[[], None] | None = None,
) -> Any:
    """The ASGI application: FastAPI routes wrapped in the request log and the body cap."""
    api = FastAPI(
        title="bli-memory door",
        version=__version__,
        description="Persistent memory for coding agents: hybrid search, versioned updates, tombstones.",
    )

    api.state.store = store

    @api.exception_handler(DoorError)
    async def door_error(_: Request, exc: DoorError) -> JSONResponse:
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
            {"error": "invalid_request", "message": _describe_validation(exc.errors())}, status_code=400
        )

    @api.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        sys.stderr.write(f"bli-memory-door internal error: {type(exc).__name__}\n")
        return JSONResponse({"error": "internal", "message": "the door failed; see its log"}, status_code=500)

    @api.get("/healthz")
    def healthz() -> dict[str, Any]:
        health: dict[str, Any] = {
            "ok": True,
            "version": __version__,
            "store": "sqlite",
            "embedder": embedder_name,
        }
        if store.embedder_error is not None:
            health["embedderError"] = store.embedder_error  # serving keyword + recency meanwhile
        return health

    @api.post("/api/memory/search", responses=_errors(*_COMMON))
    def search(body: SearchBody, caller: Caller) -> JSONResponse:
        hits = store.search(
            caller, body.containerTag, body.q, limit=body.limit, threshold=float(body.threshold)
        )
        # a JSONResponse skips FastAPI's recursive jsonable_encoder: the answer is plain JSON already
        return JSONResponse(
            {
                "results": [hit.to_json() for hit in hits],
                "searched": store.space_tags(caller, body.containerTag),
            }
        )

    @api.post(
        "/api/memory/save",
        status_code=201,
        responses={
            202: {"description": "extract: true: the job is queued ({queued, jobId, containerTag})"},
            **_errors(*_COMMON, 429),
        },
    )
    def save(body: SaveBody, caller: Caller) -> Any:
        _not_blank(body.content)
        created_at = _created_at(body.createdAt)
        if body.extract:
            if body.customId is not None or body.createdAt is not None or body.kind != "memory":
                raise InvalidRequest("customId, createdAt and kind apply to a plain save, not to extract")
            if not extract_enabled:
                raise InvalidRequest("this door has no extraction worker", code="extract_unavailable")
            job_id, tag = store.enqueue_job(caller, body.containerTag, body.content, body.metadata)
            if on_job_queued is not None:
                on_job_queued()
            return JSONResponse({"queued": True, "jobId": job_id, "containerTag": tag}, status_code=202)
        result = store.save(
            caller,
            body.containerTag,
            body.content,
            custom_id=body.customId,
            metadata=body.metadata,
            created_at=created_at,
            kind=body.kind,
        )
        return {"id": result.id, "containerTag": result.container_tag, "status": result.status}

    @api.post("/api/memory/update", responses=_errors(*_COMMON, 404, 409))
    def update(body: UpdateBody, caller: Caller) -> dict[str, Any]:
        _not_blank(body.content)
        memory = store.update(caller, body.id, body.content)
        return {
            "id": memory.id,
            "version": memory.version,
            "previousVersionId": memory.previous_version_id,
            "containerTag": memory.container_tag,
        }

    @api.get("/api/memory/{memory_id}/history", responses=_errors(401, 404))
    def history(memory_id: str, caller: Caller) -> dict[str, Any]:
        versions = store.history(caller, memory_id)
        return {
            "id": memory_id,
            "versions": [
                {
                    "id": version.id,
                    "version": version.version,
                    "content": version.content,
                    "status": version.status,
                    "createdAt": version.to_json()["createdAt"],
                    "updatedAt": version.to_json()["updatedAt"],
                    "supersededAt": None if version.superseded_at is None else _iso(version.superseded_at),
                }
                for version in versions
            ],
        }

    @api.post("/api/memory/forget", responses=_errors(*_COMMON, 404, 409))
    def forget(body: ForgetBody, caller: Caller) -> dict[str, Any]:
        given = [name for name in ("id", "content", "query") if getattr(body, name) is not None]
        if len(given) != 1:
            raise InvalidRequest("give exactly one of id, content or query")
        memory, match, similarity = store.forget(
            caller, body.containerTag, memory_id=body.id, content=body.content, query=body.query
        )
        forgotten: dict[str, Any] = {"id": memory.id, "content": memory.content}
        if similarity is not None:
            forgotten["similarity"] = round(similarity, 4)
        return {"forgotten": forgotten, "match": match, "containerTag": memory.container_tag}

    @api.post("/api/memory/v4/profile", responses=_errors(*_COMMON))
    def profile(body: ProfileBody, caller: Caller) -> dict[str, Any]:
        return store.profile(caller, body.containerTag, body.q or None)

    @api.post("/api/memory/aliases", responses=_errors(*_COMMON, 403))
    def aliases(body: AliasBody, caller: Caller) -> dict[str, Any]:
        return store.set_alias(caller, body.alias, body.canonical)

    @api.get("/api/memory/jobs/{job_id}", responses=_errors(401, 404))
    def job(job_id: str, caller: Caller) -> dict[str, Any]:
        return store.get_job(caller, job_id).to_json()

    @api.post(
        "/api/memory/experience",
        status_code=201,
        responses={200: {"description": "an identical retry of the same id"}, **_errors(*_COMMON, 409, 502)},
    )
    def experience(body: ExperienceBody, caller: Caller) -> Any:
        import uuid

        entry_id = (body.id or str(uuid.uuid4())).lower()
        created_at = _created_at(body.created_at)
        try:
            status = store.record_experience(
                caller,
                entry_id=entry_id,
                store=body.store,
                verdict=body.verdict,
                reason=body.reason,
                created_at=created_at,
            )
        except DoorError:
            raise
        except Exception as exc:
            raise DoorError(
                f"the insert failed ({type(exc).__name__})", code="insert_failed", status=502
            ) from None
        return JSONResponse(
            {"id": entry_id, "status": "inserted" if status == 201 else "exists"}, status_code=status
        )

    @api.get("/api/ops/memory-usage", responses=_errors(401))
    def memory_usage(caller: Caller) -> dict[str, Any]:
        since = now_s() - max(EXPERIENCE_WINDOW_DAYS) * 86_400.0
        try:
            rows, total = store.experience_rows(caller, since)
        except Exception as exc:  # a failed read is named, not hidden
            return _memory_usage([], 0, failed=type(exc).__name__)
        return _memory_usage(rows, total)

    def openapi() -> dict[str, Any]:
        """FastAPI's schema, minus the 422 it documents for validation: the door answers those 400."""
        if api.openapi_schema is None:
            schema = get_openapi(
                title=api.title, version=api.version, description=api.description, routes=api.routes
            )
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            api.openapi_schema = schema
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]
    app: ASGIApp = RequestLog(BodyLimit(api))
    app.fastapi = api  # type: ignore[attr-defined]
    return app


def _iso(epoch_s: float) -> str:
    from bli_memory.door.model import iso

    return iso(epoch_s)


def _not_blank(content: str) -> None:
    if not content.strip():
        raise InvalidRequest("content must not be blank")


def _created_at(text: str | None) -> float | None:
    """An optional client timestamp: ISO 8601, not in the future (beyond clock skew)."""
    if text is None:
        return None
    try:
        value = parse_iso(text)
    except (ValueError, OverflowError):
        raise InvalidRequest(f"createdAt is not an ISO 8601 timestamp: {text[:40]!r}") from None
    if value > now_s() + CREATED_AT_SKEW_S:
        raise InvalidRequest("createdAt is in the future")
    if value < 0:
        raise InvalidRequest("createdAt is before 1970")
    return value


def _describe_validation(errors: Any) -> str:
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


def _memory_usage(rows: list[dict[str, Any]], total: int, failed: str | None = None) -> dict[str, Any]:
    """7/30-day totals by store and person, and the last reasons per store (seed README, EXPERIENCE)."""
    now = now_s()
    windows: dict[str, Any] = {}
    for days in EXPERIENCE_WINDOW_DAYS:
        since = now - days * 86_400.0
        totals: dict[str, dict[str, dict[str, int]]] = {}
        for row in rows:
            if row["created_at"] < since:
                continue
            person = totals.setdefault(row["store"], {}).setdefault(row["person"], {})
            person[row["verdict"]] = person.get(row["verdict"], 0) + 1
        windows[f"{days}d"] = totals
    last: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda item: (item["created_at"], item["id"]), reverse=True):
        entries = last.setdefault(row["store"], [])
        if len(entries) < EXPERIENCE_LAST_REASONS:
            entries.append({"verdict": row["verdict"], "reason": row["reason"], "person": row["person"]})
    return {
        "experience": {
            "windows": windows,
            "lastReasons": last,
            "rows": {
                "requested": total,
                "returned": len(rows),
                "unique": len({row["id"] for row in rows}),
                "capped": len(rows) < total,
                "failed": failed,
            },
            "note": "self-reported experience; counts do not establish quality or unbiased sampling",
        }
    }
