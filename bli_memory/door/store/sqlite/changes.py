"""The SQLite store's change log role (`roles/changes.py`): what other processes committed."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from bli_memory.door.store.base import (
    IndexRow,
    OutsideChanges,
    SpaceKey,
    outside_changes,
    split_index_state,
)
from bli_memory.door.store.roles.changes import ChangeLogStore, OutsideChangeStore
from bli_memory.door.store.sqlite.connection import (
    IDS_PER_QUERY,
    SqliteConnection,
)


class SqliteChanges(SqliteConnection, OutsideChangeStore, ChangeLogStore):
    """The change log read back: other connections' commits (`changes_elsewhere`), and what changed since a
    snapshot's counter value (`changes_since`)."""

    def changed_elsewhere(self) -> bool:
        """`PRAGMA data_version` changes only for commits made by other connections."""
        with self._read():
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            changed = self._data_version is not None and version != self._data_version
            self._data_version = version
            return changed

    def changes_elsewhere(self, held: Collection[SpaceKey]) -> OutsideChanges:
        """Another connection's commit (rare: one door serves a file) says only that something
        changed. The counter is read before `data_version`: a commit landing between the two reads
        is then reported now, never held in a position the indexes lack."""
        with self._read():
            self._seen = self._counter()[0]
            changed = self.changed_elsewhere()
        return OutsideChanges(everything=changed, seen=changed)

    def _counter(self) -> tuple[int, int]:
        """The change counter and the newest value whose log rows were pruned."""
        with self._read():
            row = self._db.execute("SELECT counter, pruned_through FROM bli_changes WHERE id = 1").fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def index_identity(self) -> str:
        """The random name this file got when its change log was made (a file made anew at the same
        path gets another; a copy keeps it, and its counter tells an older copy apart)."""
        if self._identity is None:
            with self._read():
                row = self._db.execute("SELECT identity FROM bli_changes WHERE id = 1").fetchone()
            self._identity = f"sqlite:{row[0] if row else ''}"
        return self._identity

    def change_position(self) -> int | None:
        with self._read():
            return self._seen

    def changes_since(self, position: int, held: Collection[SpaceKey]) -> OutsideChanges:
        """Every change committed after counter value `position` up to now, this store's own
        included (an index holding them takes them as no-ops), with the changed memories of `held`
        as they are now; `everything` when the log no longer reaches back to `position`."""
        with self._read():
            counter, pruned_through = self._counter()
            if counter == position:
                return OutsideChanges()
            if counter < position or pruned_through > position:
                return OutsideChanges(everything=True, seen=True)
            return self._read_changes(position, counter, held)

    def _read_changes(self, seen: int, counter: int, held: Collection[SpaceKey]) -> OutsideChanges:
        """The log rows of the transactions in (seen, counter], and the changed memories of `held`
        spaces as they are now (call under the lock)."""
        window = "counter > ? AND counter <= ?"
        rows = self._db.execute(
            f"""SELECT counter, kind, team_id, container_tag, memory_id FROM bli_change_log
                WHERE {window} ORDER BY counter LIMIT ?""",
            (seen, counter, self.change_log_max_rows + 1),
        ).fetchall()
        if len(rows) > self.change_log_max_rows:  # too many to read one by one: whole spaces
            logged = int(
                self._db.execute(
                    f"SELECT count(DISTINCT counter) FROM bli_change_log WHERE {window}", (seen, counter)
                ).fetchone()[0]
            )
            rows = self._db.execute(
                f"""SELECT DISTINCT 0, CASE kind WHEN 'memory' THEN 'space' ELSE kind END, team_id,
                        container_tag, NULL FROM bli_change_log WHERE {window}""",
                (seen, counter),
            ).fetchall()
        else:
            logged = len({row[0] for row in rows})
        if logged < counter - seen:  # pruned meanwhile
            return OutsideChanges(everything=True, seen=True)
        return outside_changes((tuple(row[1:]) for row in rows), held, self._index_state)

    def _index_state(
        self, wanted: dict[str, SpaceKey]
    ) -> tuple[dict[SpaceKey, list[IndexRow]], dict[SpaceKey, list[str]]]:
        """Per space, the `wanted` memories an index holds now (in save order) and those it must not."""
        ids = list(wanted)
        rows: list[sqlite3.Row] = []
        with self._read():
            for start in range(0, len(ids), IDS_PER_QUERY):
                chunk = ids[start : start + IDS_PER_QUERY]
                rows += self._db.execute(
                    f"""SELECT rowid, id, content, device_id, updated_at FROM memories
                        WHERE id IN ({",".join("?" * len(chunk))}) AND status = 'current' AND pinned = 0""",
                    chunk,
                ).fetchall()
        rows.sort(key=lambda row: int(row[0]))  # save order
        return split_index_state(wanted, (IndexRow(row[1], row[2], row[3], row[4]) for row in rows))
