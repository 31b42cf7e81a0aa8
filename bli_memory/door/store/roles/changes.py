"""The change log role: what other processes (other doors) committed, so that in-memory indexes and
their snapshots on disk stay true to the database."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol, runtime_checkable

from bli_memory.door.store.base import OutsideChanges, SpaceKey


class OutsideChangeStore(Protocol):
    """What other processes committed since this store last asked."""

    def changed_elsewhere(self) -> bool:
        """True when another process (or connection) committed a change since the last call."""
        ...

    def changes_elsewhere(self, held: Collection[SpaceKey]) -> OutsideChanges:
        """What another process (or connection) committed since the last call (of this or of
        `changed_elsewhere`: both move one position), with the changed memories of the spaces in
        `held` as they are now; `OutsideChanges.everything` when the store cannot tell."""
        ...


@runtime_checkable
class ChangeLogStore(Protocol):
    """A store whose change log can say what changed since a given position, by any process (this
    one included): PostgreSQL, and SQLite from schema v6. An index snapshot of such a store is kept
    whatever its own door writes afterwards: its stamp holds the position it reflects, and a later
    start applies the log from there (`door/indexes.py`)."""

    def index_identity(self) -> str:
        """Which database this is, as a snapshot stamp names it: two databases (even of one name on
        two servers) never give the same answer; no password or host in it."""
        ...

    def change_position(self) -> int | None:
        """The change counter up to which `changes_elsewhere` has reported (None before its first
        call): the indexes the service keeps hold every change up to it."""
        ...

    def changes_since(self, position: int, held: Collection[SpaceKey]) -> OutsideChanges:
        """Every change committed after counter value `position` up to now, by any process, with
        the changed memories of `held` as they are now; `everything` when the log no longer
        reaches back to `position` (pruned) or cannot tell. Does not move `changes_elsewhere`'s
        position."""
        ...

    @property
    def unstamped_snapshots_at_log_start(self) -> bool:
        """Whether an index snapshot whose stamp names no database and no position reflects this
        database as its change log began (position 0): True for a SQLite file, whose snapshots
        only its own door wrote, before the file had a change log; False where a snapshot without a
        stamp says nothing of when it was taken."""
        ...
