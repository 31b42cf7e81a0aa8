"""The SQLite store's copy role (`roles/copy.py`): a team's history by pages, and whole tables for a migrate."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bli_memory.door.model import Memory
from bli_memory.door.store.base import (
    COPY_COLUMNS,
    COPY_TABLES,
    JSON_COLUMNS,
    PRIMARY_KEYS,
    SHARED_OR_OWN_GLOBAL_SQL,
    ImportedVersion,
    imported_values,
    in_dialect,
)
from bli_memory.door.store.roles.copy import CopyStore
from bli_memory.door.store.sqlite.connection import (
    MEMORY_COLUMNS,
    SqliteConnection,
)


class SqliteCopy(SqliteConnection, CopyStore):
    """A team's rows in insert order (export), imported rows as given, and whole tables for a migrate."""

    def rows_page(
        self, team_id: int, tags: Sequence[str] | None, after: str | None, limit: int, *, own_global: str
    ) -> list[Memory]:
        with self._read():
            after_rowid = 0
            if after is not None:
                found = self._db.execute(
                    "SELECT rowid FROM memories WHERE id = ? AND team_id = ?", (after, team_id)
                ).fetchone()
                if found is None:
                    return []
                after_rowid = int(found[0])
            tag_values: tuple[str, ...]
            if tags is None:
                in_tags, tag_values = " AND " + in_dialect(SHARED_OR_OWN_GLOBAL_SQL, "?"), (own_global,)
            else:
                in_tags, tag_values = f" AND container_tag IN ({','.join('?' * len(tags))})", tuple(tags)
            rows = self._db.execute(
                f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE team_id = ? AND rowid > ?{in_tags}
                    ORDER BY rowid LIMIT ?""",
                (team_id, after_rowid, *tag_values, limit),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def insert_imported(self, row: ImportedVersion) -> bool:
        with self._statement():
            if self._db.execute("SELECT 1 FROM memories WHERE id = ?", (row.id,)).fetchone() is not None:
                return False
            self._changed("memory", row.team_id, row.container_tag, row.id)
            self._db.execute(
                """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                       status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                       created_at, updated_at, superseded_at, embedding, embedding_model)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                imported_values(row, None if row.vector is None else row.vector.astype("float32").tobytes()),
            )
        return True

    def dump_rows(self, table: str, after: tuple[Any, ...] | None, limit: int) -> list[dict[str, Any]]:
        columns = COPY_COLUMNS[_copied_table(table)]
        key = ", ".join(PRIMARY_KEYS[table])
        where = "" if after is None else f"WHERE ({key}) > ({', '.join('?' * len(after))})"
        with self._read():
            rows = self._db.execute(
                f"SELECT {', '.join(columns)} FROM {table} {where} ORDER BY {key} LIMIT ?",
                (*(after or ()), limit),
            ).fetchall()
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def load_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        """One transaction; a key already present is skipped (ON CONFLICT DO NOTHING on the primary
        key only: a row breaking another constraint fails the whole call)."""
        columns = COPY_COLUMNS[_copied_table(table)]
        statement = (
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT ({', '.join(PRIMARY_KEYS[table])}) DO NOTHING"
        )
        values = [tuple(_stored_value(table, column, row.get(column)) for column in columns) for row in rows]
        with self.transaction():
            if table == "memories":  # a bulk copy: the spaces it fills are rebuilt, not read row by row
                for team_id, tag in {(row["team_id"], row["container_tag"]) for row in rows}:
                    self._changed("space", team_id, tag)
            elif table == "container_aliases":
                for team_id in {row["team_id"] for row in rows}:
                    self._changed("aliases", team_id)
            before = self._db.total_changes
            self._db.executemany(statement, values)
            return self._db.total_changes - before

    def count_rows(self, table: str) -> int:
        """How many rows `table` holds (migrate's progress; not part of the Store protocol)."""
        with self._read():
            return int(self._db.execute(f"SELECT count(*) FROM {_copied_table(table)}").fetchone()[0])


def _copied_table(table: str) -> str:
    """`table` when dump_rows/load_rows copy it; ValueError otherwise (a table name goes into SQL)."""
    if table not in COPY_TABLES:
        raise ValueError(f"not a copied table: {table!r}")
    return table


def _stored_value(table: str, column: str, value: Any) -> Any:
    """A dumped value as this store keeps it: JSON columns as text, bytes-like as bytes."""
    if column in JSON_COLUMNS.get(table, ()) and value is not None and not isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value
