"""Copying a history out and back in: `/api/memory/export` pages a space's (or a team's) every version,
and `/api/memory/import` writes such rows back, each answered on its own.

An export's times carry microseconds (`iso_us`), so that a row imported back is the row exported.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from bli_memory.door.api.bodies import ExportBody, ImportBody, ImportRowBody, parse_created_at
from bli_memory.door.api.caller import Caller
from bli_memory.door.api.error_answers import COMMON, WRITES, error_responses
from bli_memory.door.errors import InvalidRequest
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Memory
from bli_memory.door.service.transfer import ImportRow

#: the JSON bytes an export page stops adding rows past (an answer stays well under what a client
#: reads: 4 MiB).
EXPORT_PAGE_MAX_BYTES = 2 * 1024 * 1024


def add_routes(api: FastAPI, memories: MemoryService) -> None:
    """Export and import over `memories`."""

    @api.post("/api/memory/export", responses=error_responses(*COMMON))
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

    @api.post("/api/memory/import", responses=error_responses(*WRITES))
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
            times[name] = parse_created_at(text)
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
