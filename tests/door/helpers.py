"""Helpers for door tests: the door's code in-process (no HTTP), and a door served over each store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore
from tests.helpers import DoorProcess

if TYPE_CHECKING:
    import pytest

    from bli_memory.door.embed import Embedder
    from bli_memory.door.model import Principal

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


def device_principal(memories: MemoryService, person: str = "ada") -> Principal:
    """The principal of a new device of `person` (a new team of its own), as the door authenticates it."""
    _, token = memories.store.create_device(person=person)
    principal = memories.authenticate(token)
    assert principal is not None
    return principal
