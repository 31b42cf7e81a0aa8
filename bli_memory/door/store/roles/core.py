"""The core role every store plays: what it is, its transactions, and whether it can write now."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol


class DamageCheck(Protocol):
    """A store's check of its own data for damage (a SQLite file's `files.IntegrityCheck`): its
    state for /healthz (`whole`, `partial`, `running`, `damaged`, `unfinished`)."""

    #: where the checked data lives
    path: str
    #: how the check stands
    state: str
    #: what the check found, when `damaged`
    detail: str

    @property
    def damaged(self) -> bool:
        """Whether damage was found: every write is refused from then on."""
        ...

    def go(self) -> None:
        """Let a check that waits in the background begin now (the door's indexes are loaded)."""
        ...


class StoreCore(Protocol):
    """A database the door keeps its rows in.

    Errors leave a store as the door's own (`door/errors.py`): `StoreFull`, `StoreDamaged` and
    `StoreUnavailable` for the database's failures, mapped from its driver's at the store's
    boundary, so no caller needs to know which database answers."""

    #: a short name for logs and /healthz ("sqlite", "postgresql").
    name: str
    #: the database's version for the start line and /healthz (SQLite's library, PostgreSQL's server).
    version: str

    def describe(self) -> str:
        """Where the data lives, for the door's start line (never a password)."""
        ...

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction; nested calls join the outer one."""
        ...

    def is_damage(self, exc: BaseException) -> bool:
        """Whether `exc` says the stored data is damaged (background work then stops for good)."""
        ...

    @property
    def integrity(self) -> DamageCheck | None:
        """The store's own check for damage, or None where the database checks itself (a server)."""
        ...

    def write_problem(self) -> str | None:
        """Why a write would fail now (no room left), or None; cheap and read-only (for /healthz).
        Raises StoreUnavailable when a database server cannot be reached."""
        ...
