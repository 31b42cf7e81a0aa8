"""The door's HTTP API: validation, authentication and the `{error, message}` shape, over the memory
service.

FastAPI gives the OpenAPI document (`/openapi.json`) and body validation from the models below; this
module turns every failure — a validation error, malformed JSON, a body over the cap, a store error, an
unexpected exception — into `{error, message}` with the right status and never a stack trace. Handlers
are plain functions: FastAPI runs them in its thread pool, and the memory service serialises writes.
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, RedirectResponse, Response
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
from bli_memory.door import browse, hook_stats, web
from bli_memory.door.errors import (
    DoorError,
    Forbidden,
    InvalidRequest,
    NotFound,
    RequestTimeout,
    StorageFull,
    StoreDamaged,
    StoreFull,
    StoreUnavailable,
    TooLarge,
    Unauthorized,
    UnsupportedMediaType,
    first_line,
)
from bli_memory.door.memories import ImportRow, MemoryService
from bli_memory.door.model import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_LIMIT,
    MAX_PIN_CHARS,
    MAX_TAG_CHARS,
    RESERVED_TAG_PREFIX,
    Memory,
    Principal,
    is_pinned_metadata,
    is_reserved_tag,
    iso,
    now_s,
    parse_iso,
)
from bli_memory.door.rewrite import QuestionRewriter, fuse_hits
from bli_memory.door.server import READ_TIMEOUT_S

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
#: fields that name a space: none may name a reserved tag (a person's global space is the door's to derive).
_SPACE_FIELDS = ("containerTag", "alias", "canonical")


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
                if name in _SPACE_FIELDS and is_reserved_tag(value):
                    raise ValueError(
                        f"{name}: tags starting with {RESERVED_TAG_PREFIX!r} are reserved; "
                        "use scope to reach your global space"
                    )
        metadata = getattr(self, "metadata", None)
        if metadata is not None:
            _check_metadata(metadata)
        return self


def _valid_unicode(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name} is not valid Unicode (a lone surrogate)") from None
    if "\x00" in value:  # PostgreSQL text cannot hold it: refused alike on every store
        raise ValueError(f"{name} contains a NUL character (U+0000), which cannot be stored")


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
    #: how long a question's rewrite may take, at most (`bli_memory.door.rewrite`); None: the door's own
    rewriteBudgetMs: Annotated[StrictInt, Field(ge=0, le=60_000)] | None = None
    scope: Literal["project", "global", "all"] = "all"


class SaveBody(_Body):
    model_config = _STRICT
    content: Content
    containerTag: Tag
    customId: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG_CHARS)] | None = None
    extract: StrictBool = False
    metadata: dict[str, Any] | None = None
    createdAt: StrictStr | None = None
    kind: Literal["memory", "document"] = "memory"
    scope: Literal["project", "global"] = "project"


class UpdateBody(_Body):
    model_config = _STRICT
    id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)]
    content: Content


class ForgetBody(_Body):
    model_config = _STRICT
    containerTag: Tag
    id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)] | None = None
    content: Content | None = None
    query: Annotated[StrictStr, Field(min_length=1, max_length=MAX_QUERY_CHARS)] | None = None
    scope: Literal["project", "global"] = "project"


class ProfileBody(_Body):
    model_config = _STRICT
    containerTag: Tag
    q: Annotated[StrictStr, Field(max_length=MAX_QUERY_CHARS)] | None = None


class ListBody(_Body):
    """Browsing: a page of a space, newest first; `cursor` is the `nextCursor` of the page before."""

    model_config = _STRICT
    containerTag: Tag
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)] = browse.LIST_LIMIT_DEFAULT
    cursor: Annotated[StrictStr, Field(min_length=1, max_length=browse.MAX_CURSOR_CHARS)] | None = None
    scope: Literal["project", "global", "all"] = "project"


class RecentBody(_Body):
    model_config = _STRICT
    containerTag: Tag
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)] = browse.RECENT_LIMIT_DEFAULT
    scope: Literal["project", "global", "all"] = "project"


class PinBody(_Body):
    model_config = _STRICT
    content: Annotated[StrictStr, Field(min_length=1, max_length=MAX_PIN_CHARS)]
    containerTag: Tag
    scope: Literal["project", "global"] = "project"


class PinsBody(_Body):
    model_config = _STRICT
    containerTag: Tag


class UnpinBody(_Body):
    model_config = _STRICT
    id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)]


class AliasBody(_Body):
    model_config = _STRICT
    alias: Tag
    canonical: Tag


class HookStatsBody(BaseModel):
    """One device's hourly hook figures, each hour as its stats file holds it (`door.hook_stats`)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    hours: list[Any]


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


#: rows an export page holds at most, and the JSON bytes it stops adding rows past (an answer stays
#: well under what a client reads: 4 MiB).
EXPORT_MAX_ROWS = 500
EXPORT_PAGE_MAX_BYTES = 2 * 1024 * 1024
#: rows one import request may carry (the body cap, 1 MiB, usually binds first).
IMPORT_MAX_ROWS = 500
RowId = Annotated[StrictStr, Field(pattern=r"^mem_[A-Za-z0-9_-]{1,96}$")]


class ExportBody(_Body):
    model_config = _STRICT
    containerTag: Tag | None = None
    all: StrictBool = False
    after: RowId | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=EXPORT_MAX_ROWS)] = 200

    @model_validator(mode="after")
    def _one_scope(self) -> ExportBody:
        if (self.containerTag is None) == (not self.all):
            raise ValueError("give containerTag or all: true, not both")
        return self


class ImportRowBody(_Body):
    model_config = _STRICT
    id: RowId
    rootId: RowId
    previousVersionId: RowId | None = None
    version: Annotated[StrictInt, Field(ge=1)]
    status: Literal["current", "superseded", "forgotten"]
    kind: Literal["memory", "document"] = "memory"
    containerTag: Tag
    content: Content
    customId: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG_CHARS)] | None = None
    metadata: dict[str, Any] | None = None
    createdAt: StrictStr
    updatedAt: StrictStr
    supersededAt: StrictStr | None = None


class ImportBody(_Body):
    model_config = _STRICT
    rows: Annotated[list[ImportRowBody], Field(min_length=1, max_length=IMPORT_MAX_ROWS)]


class ErrorBody(BaseModel):
    """Every error the door answers: a stable code and one sentence for a person."""

    error: str = Field(examples=["invalid_request"])
    message: str = Field(examples=["limit: Input should be less than or equal to 100"])


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
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


_COMMON = (400, 401, 403, 408, 413, 415)
_WRITES = (*_COMMON, 503)


# ---------------------------------------------------------------------------- middleware


class AllowedHosts:
    """The `Host` values the door answers: `name:port` exactly, or a bare name with any port.

    A web page cannot choose the Host its browser sends, only the name it resolves: checking the Host
    keeps a page whose name was rebound to 127.0.0.1 (DNS rebinding) from reaching a loopback door.
    """

    def __init__(self, hosts: Iterable[str]) -> None:
        self.exact: set[str] = set()
        self.names: set[str] = set()
        self.any = False
        for host in hosts:
            host = host.strip().lower()
            if host == "*":
                self.any = True
            elif _split_host(host)[1]:
                self.exact.add(host)
            elif host:
                self.names.add(host)

    def allows(self, host: str) -> bool:
        host = host.lower()
        return self.any or host in self.exact or _split_host(host)[0] in self.names


def _split_host(host: str) -> tuple[str, str]:
    """`name:port` or `[v6]:port` -> (name, port); the port is "" when absent."""
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return host, ""
        return host[: end + 1], host[end + 2 :] if host[end + 1 : end + 2] == ":" else ""
    name, colon, port = host.rpartition(":")
    return (name, port) if colon and ":" not in name else (host, "")


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def door_hosts(bind_host: str, port: int, extra: Iterable[str] = ()) -> AllowedHosts:
    """The names a door bound to `bind_host:port` answers by default — that address and the loopback
    names, each with the port — plus `extra` (`name` for any port, `name:port`, or `*` for any)."""
    bound = f"[{bind_host}]" if ":" in bind_host else bind_host
    names = {bound, *LOOPBACK_NAMES} - {"0.0.0.0", "[::]"}
    return AllowedHosts([*(f"{name}:{port}" for name in sorted(names)), *extra])


def _json_media_type(value: bytes) -> bool:
    """`application/json`, optionally with `charset=utf-8` (JSON is UTF-8)."""
    media, _, params = value.decode("latin-1").partition(";")
    if media.strip().lower() != "application/json":
        return False
    for param in params.split(";"):
        name, _, given = param.partition("=")
        if name.strip().lower() == "charset" and given.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


async def _receive_by(receive: Receive, deadline_s: float) -> MutableMapping[str, Any] | None:
    """The next message, or None when it has not come by `deadline_s` (the loop's clock)."""
    remaining_s = deadline_s - asyncio.get_running_loop().time()
    if remaining_s <= 0:
        return None
    try:
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(remaining_s):
                return await receive()
        return await asyncio.wait_for(receive(), remaining_s)
    except asyncio.TimeoutError:
        return None


class RequestGate:
    """Check a request before the API sees it: its `Host` is one of the door's names, an `Origin` (a
    browser's cross-site call) is the door's own, a body is declared JSON, is under `limit` bytes
    (whether it says its length or streams it) and arrives within `read_timeout_s`.

    Starlette would read any size into memory before validation; this counts bytes as they arrive.
    A refusal closes the connection: the rest of an unread body is not wanted.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: AllowedHosts | None = None,
        limit: int = MAX_BODY_BYTES,
        read_timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.limit = limit
        self.read_timeout_s = read_timeout_s

    def _refusal(self, headers: list[tuple[bytes, bytes]]) -> DoorError | None:
        host = origin = content_type = None
        body = False
        for name, value in headers:
            if name == b"host":
                host = value
            elif name == b"origin":
                origin = value
            elif name == b"content-type":
                content_type = value
            elif name == b"content-length":
                if value.isdigit() and int(value) > self.limit:
                    return TooLarge(f"the body is larger than {self.limit} bytes")
                body = body or value != b"0"
            elif name == b"transfer-encoding":
                body = True
        shown = "" if host is None else host.decode("latin-1").lower()
        if self.allowed_hosts is not None and not self.allowed_hosts.allows(shown):
            return Forbidden(
                "this door does not answer to that Host; start it with --allowed-host for another name"
                if host is not None
                else "the request has no Host header",
                code="host_not_allowed",
            )
        if origin is not None:  # only browsers send one; the door's own page would be same-origin
            scheme, sep, authority = origin.decode("latin-1").lower().partition("://")
            if not sep or scheme not in ("http", "https") or authority != shown:
                return Forbidden("cross-origin requests are refused", code="cross_origin")
        if body and (content_type is None or not _json_media_type(content_type)):
            return UnsupportedMediaType("the body must be JSON, sent as Content-Type: application/json")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope.get("headers", []))
        if refusal is not None:
            await _send_error(send, refusal, close=True)
            return
        deadline_s = asyncio.get_running_loop().time() + self.read_timeout_s
        received = 0
        refused = False

        async def limited_receive() -> MutableMapping[str, Any]:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await _receive_by(receive, deadline_s)
            if message is None:
                refused = True
                seconds = f"{self.read_timeout_s:g}"
                await _send_error(
                    send, RequestTimeout(f"the request body did not arrive within {seconds} s"), close=True
                )
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    # Answer now; whatever the app makes of the cut-off body is dropped below.
                    refused = True
                    await _send_error(
                        send, TooLarge(f"the body is larger than {self.limit} bytes"), close=True
                    )
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


async def _send_error(send: Send, error: DoorError, *, close: bool = False) -> None:
    body = json.dumps({"error": error.code, "message": error.message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
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
    """The caller behind `Authorization: Bearer <token>`, or else the memory page's session cookie
    (`door.web`: a state-changing request must carry its CSRF token); 401 for a missing, unknown or
    revoked token or session."""
    del declared  # only declares the bearer scheme in /openapi.json; the header is read as sent
    authorization = request.headers.get("authorization")
    if not authorization:
        session_id = request.cookies.get(web.COOKIE_NAME)
        if session_id:
            principal, _ = web.session_principal(
                request.app.state.memories,
                request.app.state.web_sessions,
                session_id,
                request.method,
                request.headers.get(web.CSRF_HEADER),
            )
            return principal
        raise Unauthorized("missing Authorization: Bearer token")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be `Bearer <token>`")
    found: Principal | None = request.app.state.memories.authenticate(token.strip())
    if found is None:
        raise Unauthorized("the token is unknown or revoked")
    return found


Caller = Annotated[Principal, Depends(_principal)]


def create_app(
    memories: MemoryService,
    *,
    embedder_name: str = "none",
    extract_enabled: bool = False,
    on_job_queued: Callable[[], None] | None = None,
    allowed_hosts: AllowedHosts | None = None,
    read_timeout_s: float = READ_TIMEOUT_S,
    rewriter: QuestionRewriter | None = None,
    web_sessions: web.WebSessions | None = None,
) -> Any:
    """The ASGI application: FastAPI routes behind the request gate, wrapped in the request log.

    `rewriter` also searches a question as the statement that would answer it (`door.rewrite`).

    `allowed_hosts` None answers any Host (an app driven in-process); `serve` always passes its own.
    `web_sessions` holds the memory page's sign-in codes and sessions (`door.web`).
    """
    api = FastAPI(
        title="bli-memory door",
        version=__version__,
        description="Persistent memory for coding agents: hybrid search, versioned updates, tombstones.",
        # no /docs or /redoc: those pages load their scripts from a CDN; /openapi.json stays
        docs_url=None,
        redoc_url=None,
    )

    api.state.memories = memories
    sessions = web_sessions or web.WebSessions()
    api.state.web_sessions = sessions

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

    @api.exception_handler(StoreFull)
    async def storage_error(_: Request, exc: StoreFull) -> JSONResponse:
        sys.stderr.write(
            f"bli-memory-door storage full: could not write to {memories.store.describe()} ({exc}); "
            "free space on its disk — writes answer 503 storage_full until then\n"
        )
        full = StorageFull("the store is full (no space left for the database); nothing was written")
        return JSONResponse({"error": full.code, "message": full.message}, status_code=full.status)

    def damaged_answer() -> JSONResponse:
        return JSONResponse(
            {
                "error": "store_damaged",
                "message": "the door's database is damaged; it takes no more writes (nothing was written "
                "by this request) and still answers the reads it can. See 'A damaged database' in "
                "docs/door-operations.md",
            },
            status_code=503,
        )

    @api.exception_handler(StoreDamaged)
    async def store_damaged(_: Request, exc: StoreDamaged) -> JSONResponse:
        return damaged_answer()  # said once on stderr when the damage was found: no line per write

    @api.exception_handler(sqlite3.DatabaseError)
    async def sqlite_error(_: Request, exc: sqlite3.DatabaseError) -> JSONResponse:
        found = getattr(memories.store, "found_damage", None)  # a SQLite file's
        if found is None or not memories.store.is_damage(exc):
            raise exc  # not damage: the generic 500 below
        if found(exc):  # a read met a damaged page: no more writes from now on
            sys.stderr.write(
                f"bli-memory-door: {memories.store.describe()} is damaged ({first_line(exc)}), found by "
                "a request: the door refuses every write from now on (503 store_damaged) and still "
                "serves the reads it can. Stop it and see 'A damaged database' in docs/door-operations.md\n"
            )
        return damaged_answer()

    @api.exception_handler(StoreUnavailable)
    async def store_unavailable(_: Request, exc: StoreUnavailable) -> JSONResponse:
        sys.stderr.write(f"bli-memory-door store unavailable: {memories.store.describe()} ({exc})\n")
        return JSONResponse(
            {
                "error": "store_unavailable",
                "message": "the door cannot reach its database right now; nothing was written by this "
                "request. Try again shortly",
            },
            status_code=503,
        )

    @api.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        sys.stderr.write(f"bli-memory-door internal error: {type(exc).__name__}\n")
        return JSONResponse({"error": "internal", "message": "the door failed; see its log"}, status_code=500)

    @api.get("/healthz", responses={503: {"description": "ok false: the store cannot write (reason)"}})
    def healthz() -> JSONResponse:
        health: dict[str, Any] = {
            "ok": True,
            "version": __version__,
            "store": memories.store.name,
            "storeVersion": memories.store.version,
            "embedder": embedder_name,
        }
        if memories.embedder_error is not None:
            health["embedderError"] = memories.embedder_error  # serving keyword + recency meanwhile
        integrity = getattr(memories.store, "integrity", None)  # a SQLite file's check for damage
        if integrity is not None:
            health["integrityCheck"] = integrity.state
            if integrity.damaged:  # reads still work; every write is refused
                health.update(
                    ok=False,
                    reason="store_damaged",
                    message=f"{integrity.path} is damaged ({integrity.detail})",
                )
                return JSONResponse(health, status_code=503)
        try:
            problem = memories.store.write_problem()
        except StoreUnavailable as exc:  # a database server out of reach
            health.update(ok=False, reason="store_unavailable", message=str(exc))
            return JSONResponse(health, status_code=503)
        if problem is not None:  # reads still work; a write would fail
            health.update(ok=False, reason="storage_full", message=problem)
        return JSONResponse(health, status_code=200 if problem is None else 503)

    @api.post("/api/memory/search", responses=_errors(*_COMMON))
    def search(body: SearchBody, caller: Caller) -> JSONResponse:
        hits = memories.search(
            caller,
            body.containerTag,
            body.q,
            limit=body.limit,
            threshold=float(body.threshold),
            scope=body.scope,
        )
        statement = None
        if rewriter is not None:
            budget_s = None if body.rewriteBudgetMs is None else body.rewriteBudgetMs / 1000.0
            statement = rewriter.rewrite(body.q, budget_s)
            if statement is not None:
                also = memories.search(
                    caller,
                    body.containerTag,
                    statement,
                    limit=body.limit,
                    threshold=float(body.threshold),
                    scope=body.scope,
                )
                hits = fuse_hits(hits, also, body.limit)
        answer: dict[str, Any] = {
            "results": [{**hit.to_json(), "scope": memories.scope_of(caller, hit.memory)} for hit in hits],
            "searched": [] if body.scope == "global" else memories.space_tags(caller, body.containerTag),
            "scope": body.scope,
        }
        if statement is not None:
            answer["rewrittenAs"] = statement
        # a JSONResponse skips FastAPI's recursive jsonable_encoder: the answer is plain JSON already
        return JSONResponse(answer)

    @api.post(
        "/api/memory/save",
        status_code=201,
        responses={
            202: {"description": "extract: true: the job is queued ({queued, jobId, containerTag})"},
            **_errors(*_WRITES, 429),
        },
    )
    def save(body: SaveBody, caller: Caller) -> Any:
        created_at = _created_at(body.createdAt)
        space = memories.write_tag(caller, body.containerTag, body.scope)
        if body.extract:
            if body.customId is not None or body.createdAt is not None or body.kind != "memory":
                raise InvalidRequest("customId, createdAt and kind apply to a plain save, not to extract")
            if is_pinned_metadata(body.metadata):
                raise InvalidRequest("a pin is kept verbatim, never extracted: pin it without extract")
            if not extract_enabled:
                raise InvalidRequest("this door has no extraction worker", code="extract_unavailable")
            job_id, tag = memories.enqueue_job(caller, space, body.content, body.metadata)
            if on_job_queued is not None:
                on_job_queued()
            return JSONResponse({"queued": True, "jobId": job_id, "containerTag": tag}, status_code=202)
        result = memories.save(
            caller,
            space,
            body.content,
            custom_id=body.customId,
            metadata=body.metadata,
            created_at=created_at,
            kind=body.kind,
        )
        return {
            "id": result.id,
            "containerTag": result.container_tag,
            "status": result.status,
            "scope": body.scope,
        }

    @api.post("/api/memory/update", responses=_errors(*_WRITES, 404, 409))
    def update(body: UpdateBody, caller: Caller) -> dict[str, Any]:
        memory = memories.update(caller, body.id, body.content)
        return {
            "id": memory.id,
            "version": memory.version,
            "previousVersionId": memory.previous_version_id,
            "containerTag": memory.container_tag,
        }

    @api.get("/api/memory/{memory_id}/history", responses=_errors(401, 404))
    def history(memory_id: str, caller: Caller) -> dict[str, Any]:
        versions = memories.history(caller, memory_id)
        return {
            "id": memory_id,
            "versions": [
                {
                    "id": version.id,
                    "version": version.version,
                    "content": version.content,
                    "status": version.status,
                    "createdAt": iso(version.created_at),
                    "updatedAt": iso(version.updated_at),
                    "supersededAt": None if version.superseded_at is None else iso(version.superseded_at),
                }
                for version in versions
            ],
        }

    @api.post("/api/memory/forget", responses=_errors(*_WRITES, 404, 409))
    def forget(body: ForgetBody, caller: Caller) -> dict[str, Any]:
        given = [name for name in ("id", "content", "query") if getattr(body, name) is not None]
        if len(given) != 1:
            raise InvalidRequest("give exactly one of id, content or query")
        memory, match, similarity = memories.forget(
            caller,
            body.containerTag,
            memory_id=body.id,
            content=body.content,
            query=body.query,
            scope=body.scope,
        )
        forgotten: dict[str, Any] = {"id": memory.id, "content": memory.content}
        if similarity is not None:
            forgotten["similarity"] = round(similarity, 4)
        return {
            "forgotten": forgotten,
            "match": match,
            "containerTag": memory.container_tag,
            "scope": memories.scope_of(caller, memory),
        }

    @api.post("/api/memory/v4/profile", responses=_errors(*_COMMON))
    def profile(body: ProfileBody, caller: Caller) -> dict[str, Any]:
        found = memories.profile(caller, body.containerTag, body.q or None)
        return {
            "profile": {"static": [memory.content for memory in found.static], "dynamic": found.dynamic},
            "pins": [
                _pin_json(memories, caller, memory) for memory in memories.pins(caller, body.containerTag)
            ],
            "recent": [memory.to_json() for memory in found.recent],
            "containerTag": found.tags[0],
            "searched": found.tags,
        }

    # -- browsing: a space's current memories newest first (door/browse.py)
    @api.post("/api/memory/list", responses=_errors(*_COMMON))
    def list_memories(body: ListBody, caller: Caller) -> JSONResponse:
        page = browse.browse(memories, caller, body.containerTag, body.limit, body.cursor, body.scope)
        return JSONResponse(browse.page_json(page))

    @api.post("/api/memory/recent", responses=_errors(*_COMMON))
    def recent_memories(body: RecentBody, caller: Caller) -> JSONResponse:
        page = browse.browse(memories, caller, body.containerTag, body.limit, scope=body.scope)
        return JSONResponse({**browse.page_json(page), "nextCursor": None})

    # ---- pins: always-loaded facts, kept verbatim (docs/scopes-and-pins.md)

    @api.post("/api/memory/pin", status_code=201, responses=_errors(*_WRITES))
    def pin(body: PinBody, caller: Caller) -> dict[str, Any]:
        result = memories.pin(caller, body.containerTag, body.content, scope=body.scope)
        return {
            "id": result.id,
            "containerTag": result.container_tag,
            "status": result.status,
            "scope": body.scope,
        }

    @api.post("/api/memory/pins", responses=_errors(*_COMMON))
    def pins(body: PinsBody, caller: Caller) -> dict[str, Any]:
        found = memories.pins(caller, body.containerTag)
        return {
            "pins": [_pin_json(memories, caller, memory) for memory in found],
            "containerTag": memories.canonical_tag(caller, body.containerTag),
        }

    @api.post("/api/memory/unpin", responses=_errors(*_WRITES, 404, 409))
    def unpin(body: UnpinBody, caller: Caller) -> dict[str, Any]:
        memory = memories.unpin(caller, body.id)
        return {
            "id": memory.id,
            "previousVersionId": memory.previous_version_id,
            "content": memory.content,
            "containerTag": memory.container_tag,
            "scope": memories.scope_of(caller, memory),
            "status": "unpinned",
        }

    @api.post("/api/memory/aliases", responses=_errors(*_WRITES))
    def aliases(body: AliasBody, caller: Caller) -> dict[str, Any]:
        result = memories.set_alias(caller, body.alias, body.canonical)
        return {"alias": result.alias, "canonical": result.canonical, "tags": result.tags}

    @api.post("/api/memory/export", responses=_errors(*_COMMON))
    def export(body: ExportBody, caller: Caller) -> JSONResponse:
        rows, tags = memories.export_page(caller, body.containerTag, body.after, body.limit)
        page: list[dict[str, Any]] = []
        size = 0
        for memory in rows:
            row = export_row(memory)
            size += len(json.dumps(row, ensure_ascii=False).encode("utf-8"))
            if page and size > EXPORT_PAGE_MAX_BYTES:
                break
            page.append(row)
        more = len(page) < len(rows) or len(rows) == body.limit
        return JSONResponse(
            {"rows": page, "next": page[-1]["id"] if more and page else None, "searched": tags}
        )

    @api.post("/api/memory/import", responses=_errors(*_WRITES))
    def import_history(body: ImportBody, caller: Caller) -> dict[str, Any]:
        results: list[dict[str, Any]] = [{"id": row.id} for row in body.rows]
        wanted: list[tuple[int, ImportRow]] = []
        for index, row in enumerate(body.rows):
            try:
                wanted.append((index, _import_row(row)))
            except InvalidRequest as exc:
                results[index].update(error=exc.code, message=exc.message)
        outcomes = memories.import_rows(caller, [row for _, row in wanted])
        for (index, _), (status, message) in zip(wanted, outcomes, strict=True):
            if message is None:
                results[index]["status"] = status
            else:
                results[index].update(error=status, message=message)
        return {"results": results}

    @api.get("/api/memory/jobs/{job_id}", responses=_errors(401, 404))
    def job(job_id: str, caller: Caller) -> dict[str, Any]:
        return memories.get_job(caller, job_id).to_json()

    @api.post(
        "/api/memory/experience",
        status_code=201,
        responses={200: {"description": "an identical retry of the same id"}, **_errors(*_WRITES, 409, 502)},
    )
    def experience(body: ExperienceBody, caller: Caller) -> Any:
        import uuid

        entry_id = (body.id or str(uuid.uuid4())).lower()
        created_at = _created_at(body.created_at)
        try:
            outcome = memories.record_experience(
                caller,
                entry_id=entry_id,
                store=body.store,
                verdict=body.verdict,
                reason=body.reason,
                created_at=created_at,
            )
        except (DoorError, StoreFull, StoreUnavailable):
            raise
        except Exception as exc:
            raise DoorError(
                f"the insert failed ({type(exc).__name__})", code="insert_failed", status=502
            ) from None
        inserted = outcome == "inserted"
        return JSONResponse(
            {"id": entry_id, "status": "inserted" if inserted else "exists"},
            status_code=201 if inserted else 200,
        )

    @api.get("/api/ops/memory-usage", responses=_errors(401))
    def memory_usage(caller: Caller) -> dict[str, Any]:
        since = now_s() - max(EXPERIENCE_WINDOW_DAYS) * 86_400.0
        try:
            rows, total = memories.experience_rows(caller, since)
        except Exception as exc:  # a failed read is named, not hidden
            return _memory_usage([], 0, failed=type(exc).__name__)
        return _memory_usage(rows, total)

    @api.post("/api/ops/hook-stats", responses=_errors(*_WRITES))
    def put_hook_stats(body: HookStatsBody, caller: Caller) -> dict[str, Any]:
        hours = hook_stats.check_hours(body.hours, now_s())
        written = memories.store.put_hook_stats(caller, hours)
        return {"hours": written}

    @api.get("/api/ops/hook-stats", responses=_errors(400, 401))
    def get_hook_stats(caller: Caller, days: int = 7) -> dict[str, Any]:
        if days not in hook_stats.WINDOWS_DAYS:
            raise InvalidRequest(f"days takes 7 or 30, not {days}")
        now = now_s()
        rows = memories.store.hook_stats_since(caller.team_id, hook_stats.hour_name(now - days * 86_400.0))
        return hook_stats.summarise(rows, days, now)

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
    _add_page_routes(api, memories, sessions)
    app: ASGIApp = RequestLog(
        web.SecurityHeaders(RequestGate(api, allowed_hosts=allowed_hosts, read_timeout_s=read_timeout_s))
    )
    app.fastapi = api  # type: ignore[attr-defined]
    return app


def _add_page_routes(api: FastAPI, memories: MemoryService, sessions: web.WebSessions) -> None:
    """The memory page (`door.web`): its files, sign-in by a one-time link, the session, logout, and
    the caller's spaces."""

    def static(name: str) -> Response:
        return Response(
            web.static_file(name),
            media_type=web.STATIC_FILES[name],
            headers={"cache-control": "no-cache"},
        )

    @api.get("/", include_in_schema=False)
    def page() -> Response:
        return static("index.html")

    @api.get("/web/{name}", include_in_schema=False)
    def page_file(name: str) -> Response:
        if name == "index.html" or name not in web.STATIC_FILES:
            raise NotFound("no such file")
        return static(name)

    @api.post("/api/web/login-link", responses=_errors(401, 403))
    def login_link(request: Request, caller: Caller) -> dict[str, Any]:
        """A one-time sign-in link for the memory page, for the device whose token calls (a page
        session cannot ask for one)."""
        if request.headers.get("authorization") is None:
            raise Forbidden("a login link is asked for with a device token, not from the page")
        code = sessions.issue_code(caller)
        return {"path": f"/login?code={code}", "expiresInS": sessions.login_link_ttl_s}

    @api.get("/login", include_in_schema=False)
    def login(request: Request, code: str = "") -> Response:
        """The sign-in link's confirmation page: who it signs in as, and a Sign in button. Opening it
        signs nobody in (login CSRF: a link minted for another device must not sign a browser in by
        itself); it sets this browser's pre-session cookie, which the button's POST must carry."""
        view = sessions.open_code(code, request.cookies.get(web.PRESESSION_COOKIE_NAME)) if code else None
        if view is None:
            return Response(
                web.static_file("index.html"),
                status_code=401,
                media_type=web.STATIC_FILES["index.html"],
            )
        answer = Response(
            web.login_page(view),
            media_type="text/html; charset=utf-8",
            headers={"cache-control": "no-store", "referrer-policy": web.LOGIN_REFERRER_POLICY},
        )
        answer.set_cookie(
            web.PRESESSION_COOKIE_NAME,
            view.presession_id,
            max_age=max(1, math.ceil(sessions.login_link_ttl_s)),
            path=web.LOGIN_PATH,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return answer

    @api.post("/login", include_in_schema=False, responses=_errors(401, 403))
    def confirm_login(request: Request, form: str = "") -> Response:
        """Sign in with the link this browser opened: its pre-session cookie and the page's form
        token (and a same-origin `Origin`, which browsers send with every form POST)."""
        if request.headers.get("origin") is None:
            raise Forbidden("signing in must come from the door's own sign-in page", code="cross_origin")
        session_id, _ = sessions.confirm(request.cookies.get(web.PRESESSION_COOKIE_NAME), form or None)
        answer = RedirectResponse("/", status_code=303)
        answer.set_cookie(
            web.COOKIE_NAME,
            session_id,
            max_age=max(1, math.ceil(sessions.session_ttl_s)),
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        answer.delete_cookie(
            web.PRESESSION_COOKIE_NAME, path=web.LOGIN_PATH, httponly=True, samesite="strict"
        )
        return answer

    @api.get("/api/web/session", responses=_errors(401))
    def session(request: Request, caller: Caller) -> dict[str, Any]:
        """Who the page acts as, and the CSRF token its state-changing requests carry."""
        session_id = request.cookies.get(web.COOKIE_NAME)
        found = sessions.lookup(session_id) if session_id else None
        return {
            "person": caller.person,
            "team": caller.team,
            "device": caller.device_id,
            "csrfToken": None if found is None else found.csrf_token,
            "expiresAt": None if found is None else iso(found.expires_at_wall_s),
        }

    @api.post("/api/web/logout", responses=_errors(401, 403))
    def logout(request: Request, caller: Caller) -> Response:
        del caller  # authenticated (and the CSRF token checked) before the session ends
        session_id = request.cookies.get(web.COOKIE_NAME)
        if session_id:
            sessions.end(session_id)
        answer = JSONResponse({"status": "signed_out"})
        answer.delete_cookie(web.COOKIE_NAME, path="/", httponly=True, samesite="strict")
        return answer

    @api.get("/api/memory/spaces", responses=_errors(401))
    def spaces(caller: Caller) -> dict[str, Any]:
        """The caller's team's spaces that hold current memories, most recently changed first; the
        person's global space is reached with `scope: global` on any of them."""
        return {"spaces": web.team_spaces(memories, caller), "person": caller.person, "team": caller.team}


def _pin_json(memories: MemoryService, caller: Principal, memory: Memory) -> dict[str, Any]:
    """One pin as the door shows it: the memory's fields and which scope it belongs to."""
    return {**memory.to_json(), "scope": memories.scope_of(caller, memory)}


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


def iso_us(epoch_s: float) -> str:
    """ISO 8601 in UTC with microseconds: an export's times, exact enough to import back unchanged."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(epoch_s, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def export_row(memory: Memory) -> dict[str, Any]:
    """One row of an export (`bli-memory-mcp export`, `POST /api/memory/export`), every field present."""
    return {
        "id": memory.id,
        "rootId": memory.root_id,
        "previousVersionId": memory.previous_version_id,
        "version": memory.version,
        "status": memory.status,
        "kind": memory.kind,
        "containerTag": memory.container_tag,
        "content": memory.content,
        "customId": memory.custom_id,
        "metadata": memory.metadata,
        "createdAt": iso_us(memory.created_at),
        "updatedAt": iso_us(memory.updated_at),
        "supersededAt": None if memory.superseded_at is None else iso_us(memory.superseded_at),
    }


def _import_row(row: ImportRowBody) -> ImportRow:
    """A validated row with its times parsed (InvalidRequest for a time that is not ISO 8601 or is
    in the future)."""
    times = {}
    for name in ("createdAt", "updatedAt", "supersededAt"):
        text = getattr(row, name)
        try:
            times[name] = _created_at(text)
        except InvalidRequest as exc:
            raise InvalidRequest(exc.message.replace("createdAt", name)) from None
    created_at, updated_at = times["createdAt"], times["updatedAt"]
    assert created_at is not None and updated_at is not None  # required fields
    return ImportRow(
        id=row.id,
        root_id=row.rootId,
        previous_version_id=row.previousVersionId,
        version=row.version,
        status=row.status,
        kind=row.kind,
        container_tag=row.containerTag,
        content=row.content,
        custom_id=row.customId,
        metadata=row.metadata,
        created_at=created_at,
        updated_at=updated_at,
        superseded_at=times["supersededAt"],
    )


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
    """7/30-day totals by store and person, and the last reasons per store, with how many rows were
    asked for, returned and unique, and whether the read was capped or failed: an A/B verdict needs
    to know when its numbers are partial."""
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
