"""The door's operational routes: its health, the experience figures of memory usage, and the hourly
hook figures devices send.

`/healthz` needs no token: a supervisor asks it whether the door can serve and write.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from bli_memory import __version__
from bli_memory.door import hook_stats
from bli_memory.door.api.bodies import HookStatsBody
from bli_memory.door.api.caller import Caller
from bli_memory.door.api.error_answers import WRITES, error_responses
from bli_memory.door.errors import InvalidRequest, StoreUnavailable
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import now_s

EXPERIENCE_WINDOW_DAYS = (7, 30)
EXPERIENCE_LAST_REASONS = 5


def add_health_route(api: FastAPI, memories: MemoryService, embedder_name: str) -> None:
    """`GET /healthz`: the version, the store and the embedder, and whether the store can write now."""

    @api.get("/healthz", responses={503: {"description": "ok false: the store cannot write (reason)"}})
    def healthz() -> JSONResponse:
        health = _health(memories, embedder_name)
        return JSONResponse(health, status_code=200 if health["ok"] else 503)


def _health(memories: MemoryService, embedder_name: str) -> dict[str, Any]:
    """What `/healthz` answers: `ok` false, with a `reason` and a `message`, when the store is damaged,
    out of reach or full — reads may still work, a write would not."""
    health: dict[str, Any] = {
        "ok": True,
        "version": __version__,
        "store": memories.operations.store_name,
        "storeVersion": memories.operations.store_version,
        "embedder": embedder_name,
        # the relevance at which the prompt hook shows a search hit (None: the embedder has no calibration)
        "floor": memories.recall_floor(),
    }
    if memories.embedder_error is not None:
        health["embedderError"] = memories.embedder_error  # serving keyword + recency meanwhile
    integrity = memories.operations.integrity  # a SQLite file's check for damage (None elsewhere)
    if integrity is not None:
        health["integrityCheck"] = integrity.state
        if integrity.damaged:  # reads still work; every write is refused
            health.update(
                ok=False,
                reason="store_damaged",
                message=f"{integrity.path} is damaged ({integrity.detail})",
            )
            return health
    try:
        problem = memories.operations.write_problem()
    except StoreUnavailable as exc:  # a database server out of reach
        health.update(ok=False, reason="store_unavailable", message=str(exc))
        return health
    if problem is not None:  # reads still work; a write would fail
        health.update(ok=False, reason="storage_full", message=problem)
    return health


def add_ops_routes(api: FastAPI, memories: MemoryService) -> None:
    """Memory usage (the experience entries' totals) and the hook figures, both per team."""

    @api.get("/api/ops/memory-usage", responses=error_responses(401))
    def memory_usage(caller: Caller) -> dict[str, Any]:
        since = now_s() - max(EXPERIENCE_WINDOW_DAYS) * 86_400.0
        try:
            rows, total = memories.experience_rows(caller, since)
        except Exception as exc:  # a failed read is named, not hidden
            return _memory_usage([], 0, failed=type(exc).__name__)
        return _memory_usage(rows, total)

    @api.post("/api/ops/hook-stats", responses=error_responses(*WRITES))
    def put_hook_stats(body: HookStatsBody, caller: Caller) -> dict[str, Any]:
        hours = hook_stats.check_hours(body.hours, now_s())
        written = memories.operations.put_hook_stats(caller, hours)
        return {"hours": written}

    @api.get("/api/ops/hook-stats", responses=error_responses(400, 401))
    def get_hook_stats(caller: Caller, days: int = 7) -> dict[str, Any]:
        if days not in hook_stats.WINDOWS_DAYS:
            raise InvalidRequest(f"days takes 7 or 30, not {days}")
        now = now_s()
        rows = memories.operations.hook_stats_since(
            caller.team_id, hook_stats.hour_name(now - days * 86_400.0)
        )
        return hook_stats.summarise(rows, days, now)


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
