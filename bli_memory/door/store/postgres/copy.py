"""The PostgreSQL store's copy role (`roles/copy.py`): a team's history by pages, and whole tables for a
migrate."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

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
from bli_memory.door.store.postgres.connection import (
    MEMORY_COLUMNS,
    PostgresConnection,
    vector_array,
)
from bli_memory.door.store.roles.copy import CopyStore

if TYPE_CHECKING:
    Connection = psycopg.Connection[dict[str, Any]]


#: tables whose ids PostgreSQL numbers itself: after rows with their own ids, numbering goes on past them.
_IDENTITY_COLUMNS = {"teams": "id", "people": "id", "memories": "seq"}


class PostgresCopy(PostgresConnection, CopyStore):
    """A team's rows in save order (export), imported rows as given, and whole tables for a migrate
    (sequences moved past loaded keys)."""

    def rows_page(
        self, team_id: int, tags: Sequence[str] | None, after: str | None, limit: int, *, own_global: str
    ) -> list[Memory]:
        """By `seq` (save order): the rows after the one named `after`, found within the team."""
        in_tags = (
            "AND " + in_dialect(SHARED_OR_OWN_GLOBAL_SQL, "%(own_global)s")
            if tags is None
            else "AND container_tag = ANY(%(tags)s)"
        )
        start = (
            "0" if after is None else "(SELECT seq FROM memories WHERE id = %(after)s AND team_id = %(team)s)"
        )
        params = {
            "team": team_id,
            "tags": None if tags is None else list(tags),
            "own_global": own_global,
            "after": after,
            "limit": limit,
        }
        # an unknown `after` makes the start NULL, and `seq > NULL` holds for no row: []
        return self._memories(
            f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE team_id = %(team)s AND seq > {start} {in_tags}
                ORDER BY seq LIMIT %(limit)s""",
            params,
        )

    def insert_imported(self, row: ImportedVersion) -> bool:
        if row.vector is not None and row.vector_model is not None:
            self._ensure_vector_index(row.vector_model, int(row.vector.shape[0]))
        with self.transaction(), self._connection() as db:
            cursor = db.execute(
                """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                       status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                       created_at, updated_at, superseded_at, embedding, embedding_model)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (id) DO NOTHING""",
                imported_values(row, None if row.vector is None else row.vector.astype("float32")),
            )
            if cursor.rowcount != 1:
                return False
            self._changed("memory", row.team_id, row.container_tag, row.id)
        return True

    def dump_rows(self, table: str, after: tuple[Any, ...] | None, limit: int) -> list[dict[str, Any]]:
        columns = COPY_COLUMNS[_copied_table(table)]
        key = PRIMARY_KEYS[table]
        selected = sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(sql.Identifier(_column(name)), sql.Identifier(name))
            for name in columns
        )
        key_columns = sql.SQL(", ").join(sql.Identifier(_column(name)) for name in key)
        query = sql.SQL("SELECT {} FROM {}").format(selected, sql.Identifier(table))
        params: list[Any] = []
        if after is not None:
            marks = sql.SQL(", ").join(sql.Placeholder() for _ in key)
            query += sql.SQL(" WHERE ({}) > ({})").format(key_columns, marks)
            params += list(after)
        query += sql.SQL(" ORDER BY {} LIMIT %s").format(key_columns)
        params.append(limit)
        with self._connection() as db:
            rows = db.execute(query, params).fetchall()
        if table == "memories":
            for row in rows:
                vector = row["embedding"]
                row["embedding"] = None if vector is None else vector_array(vector).tobytes()
        return [dict(row) for row in rows]

    def load_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        """One transaction; a key already present is skipped (ON CONFLICT DO NOTHING on the primary
        key only: a row breaking another constraint fails the whole call)."""
        columns = COPY_COLUMNS[_copied_table(table)]
        if not rows:
            return 0
        statement = sql.SQL("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO NOTHING").format(
            sql.Identifier(table),
            sql.SQL(", ").join(sql.Identifier(_column(name)) for name in columns),
            sql.SQL(", ").join(sql.Placeholder() for _ in columns),
            sql.SQL(", ").join(sql.Identifier(_column(name)) for name in PRIMARY_KEYS[table]),
        )
        values = [tuple(_loadable(table, name, row.get(name)) for name in columns) for row in rows]
        if table == "memories":  # indexed as they come: no first search waits for a whole build
            for model, dim in {
                (row["embedding_model"], len(row["embedding"]) // 4) for row in rows if row.get("embedding")
            }:
                if model:
                    self._ensure_vector_index(model, dim)
        with self.transaction(), self._connection() as db:
            if table == "memories":  # a bulk copy: the spaces it fills are rebuilt, not read row by row
                for team_id, tag in {(row["team_id"], row["container_tag"]) for row in rows}:
                    self._changed("space", team_id, tag)
            elif table == "container_aliases":
                for team_id in {row["team_id"] for row in rows}:
                    self._changed("aliases", team_id)
            with db.cursor() as cursor:
                cursor.executemany(statement, values)  # pipelined: one round trip per batch
                inserted = cursor.rowcount
            identity = _IDENTITY_COLUMNS.get(table)
            if identity is not None:
                db.execute(
                    sql.SQL(
                        "SELECT setval(pg_get_serial_sequence({table}, {column}), "
                        "(SELECT coalesce(max({ident}), 0) + 1 FROM {name}), false)"
                    ).format(
                        table=sql.Literal(table),
                        column=sql.Literal(identity),
                        ident=sql.Identifier(identity),
                        name=sql.Identifier(table),
                    )
                )
        return inserted

    def count_rows(self, table: str) -> int:
        """How many rows `table` holds (migrate's progress; not part of the Store protocol)."""
        with self._connection() as db:
            row = db.execute(
                sql.SQL("SELECT count(*) AS n FROM {}").format(sql.Identifier(_copied_table(table)))
            ).fetchone()
        return int(row["n"]) if row else 0


def _column(name: str) -> str:
    """A copied column's name here: the SQLite names of `COPY_COLUMNS`, but `rowid` is `seq`."""
    return "seq" if name == "rowid" else name


def _copied_table(table: str) -> str:
    """`table` when dump_rows/load_rows copy it; ValueError otherwise (a table name goes into SQL)."""
    if table not in COPY_TABLES:
        raise ValueError(f"not a copied table: {table!r}")
    return table


def _loadable(table: str, name: str, value: Any) -> Any:
    """A dumped value as PostgreSQL takes it: a memory's float32 bytes become a vector, a JSON
    column's parsed value its text (a dump gives either)."""
    if table == "memories" and name == "embedding" and value is not None:
        import numpy as np

        return np.frombuffer(bytes(value), dtype=np.float32)
    if name in JSON_COLUMNS.get(table, ()) and value is not None and not isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value
