"""Helpers for tests that drive the door's code in-process (no HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from bli_memory.door.embed import Embedder


def open_memories(db: str | Path, embedder: Embedder | None = None) -> MemoryService:
    """The memory service over a SQLite file, as the door builds it."""
    return MemoryService(SqliteStore(db), embedder)
