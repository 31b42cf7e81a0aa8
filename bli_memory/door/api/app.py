"""The door's ASGI application: the FastAPI routes of every area, behind the request gate, wrapped in
the request log.

`create_app` only assembles: the error handlers (`error_answers`), the routes of each area, and the
ASGI wrappers (`gate`, `headers`). Each `routes_*` module adds its routes straight to the app with
`api.get`/`api.post`: an included `APIRouter` would stand in the app's route table as one opaque
entry, where the tests read every route. Route handlers are plain functions: FastAPI runs them in
its thread pool, and the memory service serialises writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from bli_memory import __version__
from bli_memory.door.api import (
    routes_copy,
    routes_jobs,
    routes_memories,
    routes_ops,
    routes_page,
    routes_spaces,
    signin,
)
from bli_memory.door.api.error_answers import install_error_handlers
from bli_memory.door.api.gate import AllowedHosts, ASGIApp, RequestGate, RequestLog
from bli_memory.door.api.headers import SecurityHeaders
from bli_memory.door.memories import MemoryService
from bli_memory.door.rewrite import QuestionRewriter
from bli_memory.door.server import READ_TIMEOUT_S


def create_app(
    memories: MemoryService,
    *,
    embedder_name: str = "none",
    extract_enabled: bool = False,
    on_job_queued: Callable[[], None] | None = None,
    allowed_hosts: AllowedHosts | None = None,
    read_timeout_s: float = READ_TIMEOUT_S,
    rewriter: QuestionRewriter | None = None,
    web_sessions: signin.WebSessions | None = None,
) -> Any:
    """The ASGI application: FastAPI routes behind the request gate, wrapped in the request log.

    `rewriter` also searches a question as the statement that would answer it (`door.rewrite`).

    `allowed_hosts` None answers any Host (an app driven in-process); `serve` always passes its own.
    `web_sessions` holds the memory page's sign-in codes and sessions (`signin`).
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
    sessions = web_sessions or signin.WebSessions()
    api.state.web_sessions = sessions
    install_error_handlers(api)
    # in this order: the routes' order is the order of /openapi.json's paths
    routes_ops.add_health_route(api, memories, embedder_name)
    routes_memories.add_routes(
        api, memories, rewriter=rewriter, extract_enabled=extract_enabled, on_job_queued=on_job_queued
    )
    routes_spaces.add_routes(api, memories)
    routes_copy.add_routes(api, memories)
    routes_jobs.add_routes(api, memories)
    routes_ops.add_ops_routes(api, memories)
    routes_page.add_routes(api, memories, sessions)

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
    app: ASGIApp = RequestLog(
        SecurityHeaders(RequestGate(api, allowed_hosts=allowed_hosts, read_timeout_s=read_timeout_s))
    )
    app.fastapi = api  # type: ignore[attr-defined]
    return app
