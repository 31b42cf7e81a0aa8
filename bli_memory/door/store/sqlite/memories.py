"""The SQLite store's memory rows role (`roles/memories.py`): aliases, and every version of every memory."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from bli_memory.door.model import Memory, new_id, now_s
from bli_memory.door.store.base import (
    BrowseRow,
    IndexRow,
    NewVersion,
    PurgeCount,
    version_values,
)
from bli_memory.door.store.roles.memories import MemoryRowStore
from bli_memory.door.store.sqlite.connection import (
    MEMORY_COLUMNS,
    MEMORY_COLUMNS_M,
    SqliteConnection,
)


class SqliteMemoryRows(SqliteConnection, MemoryRowStore):
    """Aliases and memory rows: reads by id, tag, hash and keyset, and the writes that insert a version or
    retire one, each noted in the change log."""

    def canonical_tag(self, team_id: int, tag: str) -> str:
        with self._read():
            row = self._db.execute(
                "SELECT canonical FROM container_aliases WHERE team_id = ? AND alias = ?", (team_id, tag)
            ).fetchone()
        return tag if row is None else str(row[0])

    def aliases_of(self, team_id: int, canonical: str) -> list[str]:
        with self._read():
            rows = self._db.execute(
                "SELECT alias FROM container_aliases WHERE team_id = ? AND canonical = ? ORDER BY alias",
                (team_id, canonical),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def put_alias(self, team_id: int, alias: str, canonical: str) -> None:
        with self.transaction():
            self._changed("aliases", team_id)
            self._db.execute(
                """INSERT INTO container_aliases (team_id, alias, canonical, created_at) VALUES (?, ?, ?, ?)
                   ON CONFLICT (team_id, alias) DO UPDATE SET canonical = excluded.canonical""",
                (team_id, alias, canonical, now_s()),
            )
            # Tags that pointed at the new alias now point at its canonical: no chains.
            self._db.execute(
                "UPDATE container_aliases SET canonical = ? WHERE team_id = ? AND canonical = ?",
                (canonical, team_id, alias),
            )

    def get(self, team_id: int, memory_id: str) -> Memory | None:
        with self._read():
            row = self._db.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ? AND team_id = ?", (memory_id, team_id)
            ).fetchone()
        return None if row is None else self._memory(row)

    def versions(self, team_id: int, root_id: str) -> list[Memory]:
        with self._read():
            rows = self._db.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE root_id = ? AND team_id = ? ORDER BY version, created_at",
                (root_id, team_id),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def current_version(self, team_id: int, root_id: str) -> Memory | None:
        with self._read():
            row = self._db.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE root_id = ? AND team_id = ? AND status = 'current'",
                (root_id, team_id),
            ).fetchone()
        return None if row is None else self._memory(row)

    def current_by_custom_id(self, team_id: int, tags: Sequence[str], custom_id: str) -> Memory | None:
        return self._current_by(team_id, tags, "custom_id", custom_id)

    def current_by_hash(self, team_id: int, tags: Sequence[str], content_hash: str) -> Memory | None:
        return self._current_by(team_id, tags, "content_hash", content_hash)

    def _current_by(self, team_id: int, tags: Sequence[str], column: str, value: str) -> Memory | None:
        # INDEXED BY: with ORDER BY updated_at the planner preferred walking the whole space in
        # memories_space order (88 ms per save at 100 000 memories) to probing the hash index.
        index = {"content_hash": "memories_hash", "custom_id": "memories_custom"}[column]
        marks = ",".join("?" * len(tags))
        with self._read():
            row = self._db.execute(
                f"""SELECT {MEMORY_COLUMNS} FROM memories INDEXED BY {index} WHERE team_id = ? AND status = 'current'
                    AND pinned = 0 AND container_tag IN ({marks}) AND {column} = ? ORDER BY updated_at DESC LIMIT 1""",
                (team_id, *tags, value),
            ).fetchone()
        return None if row is None else self._memory(row)

    def current_by_ids(self, team_id: int, ids: Sequence[str]) -> dict[str, Memory]:
        select = f"SELECT {MEMORY_COLUMNS_M}, p.name AS person FROM memories m LEFT JOIN people p ON p.id = m.person_id"
        return {row["id"]: self._memory(row) for row in self._current_rows_by_ids(select, team_id, ids)}

    def updated_at(self, team_id: int, ids: Sequence[str]) -> dict[str, float]:
        return {
            row[0]: row[1]
            for row in self._current_rows_by_ids("SELECT m.id, m.updated_at FROM memories m", team_id, ids)
        }

    def count_current(self, team_id: int, tags: Sequence[str]) -> int:
        marks = ",".join("?" * len(tags))
        with self._read():
            row = self._db.execute(
                f"SELECT count(*) FROM memories WHERE team_id = ? AND status = 'current' AND pinned = 0 "
                f"AND container_tag IN ({marks})",
                (team_id, *tags),
            ).fetchone()
        return int(row[0])

    def pinned(self, team_id: int, tags: Sequence[str]) -> list[Memory]:
        marks = ",".join("?" * len(tags))
        with self._read():
            rows = self._db.execute(
                f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE team_id = ? AND status = 'current' AND pinned = 1
                    AND container_tag IN ({marks}) ORDER BY created_at""",
                (team_id, *tags),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def recent(self, team_id: int, tags: Sequence[str], limit: int) -> list[Memory]:
        marks = ",".join("?" * len(tags))
        with self._read():
            rows = self._db.execute(
                f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE team_id = ? AND status = 'current' AND pinned = 0
                    AND container_tag IN ({marks}) ORDER BY updated_at DESC, rowid DESC LIMIT ?""",
                (team_id, *tags, limit),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def page_current(
        self, team_id: int, tags: Sequence[str], limit: int, before: tuple[float, str] | None
    ) -> list[BrowseRow]:
        # One indexed walk per tag (memories_space), merged here: with `container_tag IN (...)` SQLite
        # sorted the whole space instead (250 ms a page at 100 000 memories and two tags; 0.5 ms so).
        after_cursor = "" if before is None else "AND (m.updated_at, m.id) < (?, ?)"
        cursor_values: tuple[Any, ...] = () if before is None else (float(before[0]), before[1])
        rows: list[sqlite3.Row] = []
        with self._read():
            for tag in dict.fromkeys(tags):
                rows += self._db.execute(
                    f"""SELECT {MEMORY_COLUMNS_M}, p.name AS person FROM memories m
                        LEFT JOIN people p ON p.id = m.person_id
                        WHERE m.team_id = ? AND m.container_tag = ? AND m.status = 'current' AND m.pinned = 0
                        {after_cursor} ORDER BY m.updated_at DESC, m.id DESC LIMIT ?""",
                    (team_id, tag, *cursor_values, limit),
                ).fetchall()
        rows.sort(key=lambda row: (row["updated_at"], row["id"]), reverse=True)
        return [BrowseRow(self._memory(row), row["device_id"]) for row in rows[:limit]]

    def index_rows(self, team_id: int, tag: str) -> Iterable[IndexRow]:
        with self._read():
            rows = self._db.execute(
                """SELECT id, content, device_id, updated_at FROM memories WHERE team_id = ?
                   AND container_tag = ? AND status = 'current' AND pinned = 0 ORDER BY rowid""",
                (team_id, tag),
            ).fetchall()
        return [IndexRow(row[0], row[1], row[2], row[3]) for row in rows]

    def spaces(self, limit: int, team_id: int | None = None) -> list[tuple[int, str]]:
        """A loose index scan: one seek per (team, tag) in `memories_space`, then one seek for its
        newest current row. A GROUP BY over the table read every row's index entry (5.2 s of a door's
        start at 1 000 000 memories in one space); this reads a few pages per space. Equal last
        changes are ordered by team and tag."""
        newest: list[tuple[float, int, str]] = []
        with self._read():
            key = self._db.execute(
                "SELECT team_id, container_tag FROM memories WHERE team_id >= ? ORDER BY team_id, container_tag LIMIT 1",
                (0 if team_id is None else team_id,),
            ).fetchone()
            only = team_id
            while key is not None and (only is None or int(key[0]) == only):
                team_id, tag = int(key[0]), str(key[1])
                changed = self._db.execute(  # the end of the space's run in the index, not a max() scan
                    """SELECT updated_at FROM memories WHERE team_id = ? AND container_tag = ?
                       AND status = 'current' ORDER BY updated_at DESC LIMIT 1""",
                    (team_id, tag),
                ).fetchone()
                if changed is not None:
                    newest.append((float(changed[0]), team_id, tag))
                # two seeks, not `(team_id, container_tag) > (?, ?)`: SQLite walks that row value
                # through the whole space's run of the index (70 ms at 1 000 000)
                key = (
                    self._db.execute(
                        """SELECT team_id, container_tag FROM memories WHERE team_id = ? AND container_tag > ?
                       ORDER BY container_tag LIMIT 1""",
                        (team_id, tag),
                    ).fetchone()
                    or self._db.execute(
                        """SELECT team_id, container_tag FROM memories WHERE team_id > ?
                       ORDER BY team_id, container_tag LIMIT 1""",
                        (team_id,),
                    ).fetchone()
                )
        newest.sort(key=lambda space: (-space[0], space[1], space[2]))
        return [(team_id, tag) for _, team_id, tag in newest[:limit]]

    def purge(self, team_id: int, tags: Sequence[str] | None, *, dry_run: bool = False) -> PurgeCount:
        where = "team_id = ?"
        values: list[Any] = [team_id]
        if tags is not None:
            where += f" AND container_tag IN ({','.join('?' * len(tags))})"
            values += list(tags)
        with self.transaction():
            memories, current = self._db.execute(
                f"SELECT count(*), coalesce(sum(status = 'current'), 0) FROM memories WHERE {where}", values
            ).fetchone()
            jobs = self._db.execute(
                f"SELECT count(*) FROM memory_extract_jobs WHERE {where}", values
            ).fetchone()[0]
            if not dry_run:
                if tags is None:
                    self._changed("team", team_id)
                for tag in tags or ():
                    self._changed("space", team_id, tag)
                self._db.execute(f"DELETE FROM memories WHERE {where}", values)
                self._db.execute(f"DELETE FROM memory_extract_jobs WHERE {where}", values)
        return PurgeCount(memories=int(memories), current=int(current), jobs=int(jobs))

    def insert_version(self, row: NewVersion) -> str:
        memory_id = new_id("mem")
        with self._statement():
            self._changed("memory", row.team_id, row.container_tag, memory_id)
            self._db.execute(
                """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                       status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                       created_at, updated_at, embedding, embedding_model)
                   VALUES (?, ?, ?, ?, ?, ?, ?, 'current', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                version_values(
                    memory_id, row, None if row.vector is None else row.vector.astype("float32").tobytes()
                ),
            )
        return memory_id

    def retire(self, memory_id: str, status: Literal["superseded", "forgotten"]) -> bool:
        with self._statement():
            retired = self._db.execute(
                "SELECT team_id, container_tag FROM memories WHERE id = ? AND status = 'current'",
                (memory_id,),
            ).fetchone()
            if retired is None:
                return False
            self._db.execute(
                "UPDATE memories SET status = ?, superseded_at = ? WHERE id = ? AND status = 'current'",
                (status, now_s(), memory_id),
            )
            self._changed("memory", retired[0], retired[1], memory_id)
            return True

    def expired_documents(self, key_prefix: str, before: float, limit: int) -> list[tuple[int, Memory]]:
        # a prefix as a range (not LIKE, whose `_` and `%` would need escaping)
        with self._read():
            rows = self._db.execute(
                f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE kind = 'document' AND status = 'current'
                    AND created_at < ? AND custom_id >= ? AND custom_id < ? ORDER BY created_at LIMIT ?""",
                (before, key_prefix, key_prefix + "\U0010ffff", limit),
            ).fetchall()
        return [(int(row["team_id"]), self._memory(row)) for row in rows]
