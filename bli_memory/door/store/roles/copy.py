"""The copy role: a team's whole history a page at a time (export, import), and every table's rows
as they are (`bli-memory-door migrate` between two stores)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from bli_memory.door.model import Memory
from bli_memory.door.store.base import ImportedVersion


class CopyStore(Protocol):
    """Rows copied out and in exactly as they are: ids, versions, statuses and times kept."""

    #: the schema version this code writes (a database is brought to it when opened)
    SCHEMA_VERSION: int

    def rows_page(
        self, team_id: int, tags: Sequence[str] | None, after: str | None, limit: int, *, own_global: str
    ) -> list[Memory]:
        """Up to `limit` rows of one team — every status: current, superseded and forgotten — of the
        tags `tags` (None: of every tag but the reserved ones, and of the reserved tag `own_global`,
        the caller's global space: other people's global spaces are never read), in the order they
        were inserted (`insert_version` and `insert_imported` alike), starting after the row whose id
        is `after` (None: from the first). The rows carry no person. An `after` that names no row of
        the team gives []."""
        ...

    def insert_imported(self, row: ImportedVersion) -> bool:
        """Insert `row` as given: its id, status, version, root, previous version and all three
        times (pinned when its metadata says `pinned: true`, as `insert_version` does). Nothing is
        checked about how it chains: the service does that. False, writing nothing, when a row with
        that id exists already in any team."""
        ...

    def dump_rows(self, table: str, after: tuple[Any, ...] | None, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` rows of `table` in primary-key order after key `after` (None: from the start), each a
        dict of the SQLite column names to plain values; a memory's `embedding` as float32 bytes (or None).
        The columns are COPY_COLUMNS[table]; a table outside COPY_TABLES is a ValueError."""
        ...

    def load_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        """Insert rows as dump_rows gives them (from either store), keeping their keys; a row whose key is
        already there is left alone. Returns how many were inserted. One transaction: a row that breaks
        any other constraint fails the call and inserts nothing. New rows made after a load take keys
        after the loaded ones (a server store moves its sequences past them)."""
        ...

    def count_rows(self, table: str) -> int:
        """How many rows `table` (one of COPY_TABLES) holds: a copy's progress."""
        ...

    def schema_version(self) -> int:
        """The schema version the database is at now."""
        ...
