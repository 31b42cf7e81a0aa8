"""Helpers for door tests: the door's code in-process (no HTTP), and a door served over each store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.door.memories import MemoryService
from bli_memory.door.model import hash_text, now_s
from bli_memory.door.store.base import NewVersion
from bli_memory.door.store.sqlite import SqliteStore
from tests.helpers import DoorProcess

if TYPE_CHECKING:
    import numpy as np
    import pytest

    from bli_memory.door.embed import Embedder
    from bli_memory.door.model import Memory, Principal
    from bli_memory.door.store.roles import Store

#: the stores a module's shared door runs over in turn (`serve_on_store`).
STORE_KINDS = ("sqlite", "postgresql")


def serve_on_store(
    kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> DoorProcess:
    """A real `bli-memory-door serve` (no embedder) over a new SQLite file or a new database on the
    session's PostgreSQL server (the `postgres` fixture); the caller stops it."""
    folder = tmp_path_factory.mktemp(f"door_{kind}")
    home = folder / "home"
    home.mkdir()
    db: Path | str = folder / "memory.db"
    if kind == "postgresql":
        db = request.getfixturevalue("postgres").database_for(folder)
    return DoorProcess(db, home, ["--embedder", "none"])


def open_memories(db: str | Path, embedder: Embedder | None = None) -> MemoryService:
    """The memory service over a SQLite file, as the door builds it."""
    return MemoryService(SqliteStore(db), embedder)


def store_principal(store: Store, person: str = "ada", team: str = "local", admin: bool = False) -> Principal:
    """The principal of a new device of `person` in `team`, as the store authenticates it."""
    _, token = store.create_device(person=person, team=team, admin=admin)
    principal = store.authenticate(token)
    assert principal is not None
    return principal


def device_principal(memories: MemoryService, person: str = "ada") -> Principal:
    """The principal of a new device of `person`, as the door's memory service authenticates it."""
    return store_principal(memories.store, person)


def new_version(
    who: Principal,
    content: str,
    *,
    tag: str = "t",
    previous: Memory | None = None,
    custom_id: str | None = None,
    metadata: dict[str, object] | None = None,
    vector: np.ndarray | None = None,
    model: str = "model-a",
    when: float | None = None,
) -> NewVersion:
    """A row for `Store.insert_version` written by `who` (a new memory, or the next version of
    `previous`, keeping its kind and creation time); `model` names a given vector's embedder."""
    moment = now_s() if when is None else when
    return NewVersion(
        team_id=who.team_id,
        container_tag=tag,
        content=content,
        content_hash=hash_text(content),
        kind="memory" if previous is None else previous.kind,
        custom_id=custom_id,
        metadata=metadata,
        person_id=who.person_id,
        device_id=who.device_id,
        created_at=moment if previous is None else previous.created_at,
        updated_at=moment,
        vector=vector,
        vector_model=None if vector is None else model,
        previous=previous,
    )


def saved_with_extract(door: DoorProcess, tag: str, content: str) -> dict[str, Any]:
    """Save `content` in extract mode, as the Stop hook does, and wait for its job to be done."""
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag, "extract": True})
    assert status == 202, body
    job: dict[str, Any] = door.wait_job(str(body["jobId"]))
    assert job["status"] == "done", job
    return job
