"""The memory routes: search, save, update, a memory's history, forget, the profile, and browsing a
space (`/api/memory/list`, `/api/memory/recent`).

Each route parses its body, asks the memory service, and shapes the answer as JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from bli_memory.door import browse
from bli_memory.door.api.bodies import (
    ForgetBody,
    ListBody,
    ProfileBody,
    RecentBody,
    SaveBody,
    SearchBody,
    UpdateBody,
    parse_created_at,
)
from bli_memory.door.api.caller import Caller
from bli_memory.door.api.error_answers import COMMON, WRITES, error_responses
from bli_memory.door.api.routes_spaces import pin_json
from bli_memory.door.errors import InvalidRequest
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import is_pinned_metadata, iso
from bli_memory.door.rewrite import QuestionRewriter


def add_routes(
    api: FastAPI,
    memories: MemoryService,
    *,
    rewriter: QuestionRewriter | None,
    extract_enabled: bool,
    on_job_queued: Callable[[], None] | None,
) -> None:
    """The memory routes over `memories`. `rewriter` also searches a question as the statement that
    would answer it; a save with `extract: true` queues a job only when `extract_enabled`, and then
    calls `on_job_queued` to wake the worker."""

    @api.post("/api/memory/search", responses=error_responses(*COMMON))
    def search(body: SearchBody, caller: Caller) -> JSONResponse:
        hits, statement, floor = memories.search_answer(
            caller,
            body.containerTag,
            body.q,
            limit=body.limit,
            threshold=float(body.threshold),
            scope=body.scope,
            rewriter=rewriter,
            rewrite_budget_s=None if body.rewriteBudgetMs is None else body.rewriteBudgetMs / 1000.0,
            keep_relevant=body.keepRelevant,
        )
        answer: dict[str, Any] = {
            "results": [{**hit.to_json(), "scope": memories.scope_of(caller, hit.memory)} for hit in hits],
            "searched": [] if body.scope == "global" else memories.space_tags(caller, body.containerTag),
            "scope": body.scope,
            "floor": floor,  # the relevance at which the prompt hook shows a row (None: no relevance)
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
            **error_responses(*WRITES, 429),
        },
    )
    def save(body: SaveBody, caller: Caller) -> Any:
        created_at = parse_created_at(body.createdAt)
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

    @api.post("/api/memory/update", responses=error_responses(*WRITES, 404, 409))
    def update(body: UpdateBody, caller: Caller) -> dict[str, Any]:
        memory = memories.update(caller, body.id, body.content)
        return {
            "id": memory.id,
            "version": memory.version,
            "previousVersionId": memory.previous_version_id,
            "containerTag": memory.container_tag,
        }

    @api.get("/api/memory/{memory_id}/history", responses=error_responses(401, 404))
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

    @api.post("/api/memory/forget", responses=error_responses(*WRITES, 404, 409))
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

    @api.post("/api/memory/v4/profile", responses=error_responses(*COMMON))
    def profile(body: ProfileBody, caller: Caller) -> dict[str, Any]:
        found = memories.profile(caller, body.containerTag, body.q or None)
        return {
            "profile": {"static": [memory.content for memory in found.static], "dynamic": found.dynamic},
            "pins": [
                pin_json(memories, caller, memory) for memory in memories.pins(caller, body.containerTag)
            ],
            "recent": [memory.to_json() for memory in found.recent],
            "containerTag": found.tags[0],
            "searched": found.tags,
        }

    # -- browsing: a space's current memories newest first (door/browse.py)
    @api.post("/api/memory/list", responses=error_responses(*COMMON))
    def list_memories(body: ListBody, caller: Caller) -> JSONResponse:
        page = browse.browse(memories, caller, body.containerTag, body.limit, body.cursor, body.scope)
        return JSONResponse(browse.page_json(page))

    @api.post("/api/memory/recent", responses=error_responses(*COMMON))
    def recent_memories(body: RecentBody, caller: Caller) -> JSONResponse:
        page = browse.browse(memories, caller, body.containerTag, body.limit, scope=body.scope)
        return JSONResponse({**browse.page_json(page), "nextCursor": None})
