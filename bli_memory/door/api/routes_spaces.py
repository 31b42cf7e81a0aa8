"""The routes of a space's pins and aliases: pin, list the pins, unpin, and name one space as an alias of
another (docs/scopes-and-pins.md).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from bli_memory.door.api.bodies import AliasBody, PinBody, PinsBody, UnpinBody
from bli_memory.door.api.caller import Caller
from bli_memory.door.api.error_answers import COMMON, WRITES, error_responses
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Memory, Principal


def add_routes(api: FastAPI, memories: MemoryService) -> None:
    """Pins (always-loaded facts, kept verbatim) and aliases over `memories`."""

    @api.post("/api/memory/pin", status_code=201, responses=error_responses(*WRITES))
    def pin(body: PinBody, caller: Caller) -> dict[str, Any]:
        result = memories.pin(caller, body.containerTag, body.content, scope=body.scope)
        return {
            "id": result.id,
            "containerTag": result.container_tag,
            "status": result.status,
            "scope": body.scope,
        }

    @api.post("/api/memory/pins", responses=error_responses(*COMMON))
    def pins(body: PinsBody, caller: Caller) -> dict[str, Any]:
        found = memories.pins(caller, body.containerTag)
        return {
            "pins": [pin_json(memories, caller, memory) for memory in found],
            "containerTag": memories.canonical_tag(caller, body.containerTag),
        }

    @api.post("/api/memory/unpin", responses=error_responses(*WRITES, 404, 409))
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

    @api.post("/api/memory/aliases", responses=error_responses(*WRITES))
    def aliases(body: AliasBody, caller: Caller) -> dict[str, Any]:
        result = memories.set_alias(caller, body.alias, body.canonical)
        return {"alias": result.alias, "canonical": result.canonical, "tags": result.tags}


def pin_json(memories: MemoryService, caller: Principal, memory: Memory) -> dict[str, Any]:
    """One pin as the door shows it: the memory's fields and which scope it belongs to."""
    return {**memory.to_json(), "scope": memories.scope_of(caller, memory)}
