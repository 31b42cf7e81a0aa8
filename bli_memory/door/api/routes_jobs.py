"""The routes of extraction jobs and experience entries: a queued job's state, and recording how a
memory store did for a person (win, loss or noise), once per entry id.
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from bli_memory.door.api.bodies import ExperienceBody, parse_created_at
from bli_memory.door.api.caller import Caller
from bli_memory.door.api.error_answers import WRITES, error_responses
from bli_memory.door.errors import DoorError
from bli_memory.door.memories import MemoryService


def add_routes(api: FastAPI, memories: MemoryService) -> None:
    """A job's state and experience entries over `memories`."""

    @api.get("/api/memory/jobs/{job_id}", responses=error_responses(401, 404))
    def job(job_id: str, caller: Caller) -> dict[str, Any]:
        return memories.get_job(caller, job_id).to_json()

    @api.post(
        "/api/memory/experience",
        status_code=201,
        responses={
            200: {"description": "an identical retry of the same id"},
            **error_responses(*WRITES, 409, 502),
        },
    )
    def experience(body: ExperienceBody, caller: Caller) -> Any:
        entry_id = (body.id or str(uuid.uuid4())).lower()
        created_at = parse_created_at(body.created_at)
        try:
            outcome = memories.record_experience(
                caller,
                entry_id=entry_id,
                store=body.store,
                verdict=body.verdict,
                reason=body.reason,
                created_at=created_at,
            )
        except DoorError:  # the service's refusals and the store's own failures answer as themselves
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
