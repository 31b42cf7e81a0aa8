"""The PostgreSQL store's memory rows role (`roles/memories.py`): aliases, and every version of every memory."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import psycopg

from bli_memory.door.model import Memory, new_id, now_s
from bli_memory.door.store.base import (
    BrowseRow,
    IndexRow,
    NewVersion,
    PurgeCount,
    version_values,
)
from bli_memory.door.store.postgres.connection import (
    MEMORY_COLUMNS,
    MEMORY_COLUMNS_M,
    PostgresConnection,
)
from bli_memory.door.store.roles.memories import MemoryRowStore

if TYPE_CHECKING:
    Connection = psycopg.Connection[dict[str, Any]]


#: the last change of the team's current memories among some ids; `team_id + 0` and `status || ''`
#: leave the id index as the only one that can answer (see `current_by_ids`).
UPDATED_AT_BY_IDS_SQL = (
    "SELECT id, updated_at FROM memories WHERE id = ANY(%s) AND team_id + 0 = %s AND status || '' = 'current'"
)


class PostgresMemoryRows(PostgresConnection, MemoryRowStore):
    """Aliases and memory rows: reads by id, tag, hash and keyset, and the writes that insert a version or
    retire one, each noted in the change log."""

    def canonical_tag(self, team_id: int, tag: str) -> str:
        with self._connection() as db:
            row = db.execute(
                "SELECT canonical FROM container_aliases WHERE team_id = %s AND alias = %s", (team_id, tag)
            ).fetchone()
        return tag if row is None else str(row["canonical"])

    def aliases_of(self, team_id: int, canonical: str) -> list[str]:
        with self._connection() as db:
            rows = db.execute(
                "SELECT alias FROM container_aliases WHERE team_id = %s AND canonical = %s ORDER BY alias",
                (team_id, canonical),
            ).fetchall()
        return [str(row["alias"]) for row in rows]

    def put_alias(self, team_id: int, alias: str, canonical: str) -> None:
        with self.transaction(), self._connection() as db:
            self._changed("aliases", team_id)
            db.execute(
                """INSERT INTO container_aliases (team_id, alias, canonical, created_at) VALUES (%s, %s, %s, %s)
                   ON CONFLICT (team_id, alias) DO UPDATE SET canonical = excluded.canonical""",
                (team_id, alias, canonical, now_s()),
            )
            # Tags that pointed at the new alias now point at its canonical: no chains.
            db.execute(
                "UPDATE container_aliases SET canonical = %s WHERE team_id = %s AND canonical = %s",
                (canonical, team_id, alias),
            )

    def get(self, team_id: int, memory_id: str) -> Memory | None:
        return self._one(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = %s AND team_id = %s", (memory_id, team_id)
        )

    def versions(self, team_id: int, root_id: str) -> list[Memory]:
        return self._memories(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE root_id = %s AND team_id = %s ORDER BY version, created_at, seq",
            (root_id, team_id),
        )

    def current_version(self, team_id: int, root_id: str) -> Memory | None:
        return self._one(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE root_id = %s AND team_id = %s AND status = 'current'",
            (root_id, team_id),
        )

    def current_by_custom_id(self, team_id: int, tags: Sequence[str], custom_id: str) -> Memory | None:
        return self._one(
            f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE team_id = %s AND status = 'current' AND pinned = 0
                AND container_tag = ANY(%s) AND custom_id = %s ORDER BY updated_at DESC, seq DESC LIMIT 1""",
            (team_id, list(tags), custom_id),
        )

    def current_by_hash(self, team_id: int, tags: Sequence[str], content_hash: str) -> Memory | None:
        return self._one(
            f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE team_id = %s AND status = 'current' AND pinned = 0
                AND container_tag = ANY(%s) AND content_hash = %s ORDER BY updated_at DESC, seq DESC LIMIT 1""",
            (team_id, list(tags), content_hash),
        )

    # Lookups by id write `team_id + 0` and `status || ''`: only the id index can answer them then. Right
    # after a bulk load (a migrate, an import), before PostgreSQL has statistics on the new rows, the
    # planner chose the team index and read every row of the team per search (9.5 ms instead of
    # 0.14 ms at 10 000 rows; a full pass at 1 000 000).
    def current_by_ids(self, team_id: int, ids: Sequence[str]) -> dict[str, Memory]:
        found = self._memories(
            f"""SELECT {MEMORY_COLUMNS_M}, p.name AS person FROM memories m LEFT JOIN people p ON p.id = m.person_id
                WHERE m.id = ANY(%s) AND m.team_id + 0 = %s AND m.status || '' = 'current'""",
            (list(ids), team_id),
        )
        return {memory.id: memory for memory in found}

    def updated_at(self, team_id: int, ids: Sequence[str]) -> dict[str, float]:
        with self._connection() as db:
            rows = db.execute(
                UPDATED_AT_BY_IDS_SQL,
                (list(ids), team_id),
            ).fetchall()
        return {row["id"]: row["updated_at"] for row in rows}

    def count_current(self, team_id: int, tags: Sequence[str]) -> int:
        with self._connection() as db:
            row = db.execute(
                """SELECT count(*) AS n FROM memories WHERE team_id = %s AND status = 'current'
                   AND pinned = 0 AND container_tag = ANY(%s)""",
                (team_id, list(tags)),
            ).fetchone()
        return int(row["n"]) if row else 0

    def pinned(self, team_id: int, tags: Sequence[str]) -> list[Memory]:
        return self._memories(
            f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE team_id = %s AND status = 'current' AND pinned = 1
                AND container_tag = ANY(%s) ORDER BY created_at, seq""",
            (team_id, list(tags)),
        )

    def recent(self, team_id: int, tags: Sequence[str], limit: int) -> list[Memory]:
        return self._memories(
            f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE team_id = %s AND status = 'current' AND pinned = 0
                AND container_tag = ANY(%s) ORDER BY updated_at DESC, seq DESC LIMIT %s""",
            (team_id, list(tags), limit),
        )

    def index_rows(self, team_id: int, tag: str) -> Iterable[IndexRow]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT id, content, device_id, updated_at FROM memories WHERE team_id = %s
                   AND container_tag = %s AND status = 'current' AND pinned = 0 ORDER BY seq""",
                (team_id, tag),
            ).fetchall()
        return [IndexRow(row["id"], row["content"], row["device_id"], row["updated_at"]) for row in rows]

    def spaces(self, limit: int, team_id: int | None = None) -> list[tuple[int, str]]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT team_id, container_tag FROM memories WHERE status = 'current'
                   AND (%s::bigint IS NULL OR team_id = %s)
                   GROUP BY team_id, container_tag ORDER BY max(updated_at) DESC, team_id, container_tag LIMIT %s""",
                (team_id, team_id, limit),
            ).fetchall()
        return [(int(row["team_id"]), str(row["container_tag"])) for row in rows]

    def page_current(
        self, team_id: int, tags: Sequence[str], limit: int, before: tuple[float, str] | None
    ) -> list[BrowseRow]:
        """One statement (one snapshot): per tag, a walk of the space index from the cursor, merged."""
        after_cursor = "" if before is None else "AND (m.updated_at, m.id) < (%(at)s, %(id)s)"
        params: dict[str, Any] = {"team": team_id, "tags": list(dict.fromkeys(tags)), "limit": limit}
        if before is not None:
            params |= {"at": float(before[0]), "id": before[1]}
        with self._connection() as db:
            rows = db.execute(
                f"""SELECT page.*, p.name AS person FROM unnest(%(tags)s::text[]) AS wanted(tag)
                    CROSS JOIN LATERAL (
                        SELECT {MEMORY_COLUMNS_M} FROM memories m
                        WHERE m.team_id = %(team)s AND m.container_tag = wanted.tag AND m.status = 'current'
                        AND m.pinned = 0 {after_cursor}
                        ORDER BY m.updated_at DESC, m.id DESC LIMIT %(limit)s
                    ) AS page
                    LEFT JOIN people p ON p.id = page.person_id
                    ORDER BY page.updated_at DESC, page.id DESC LIMIT %(limit)s""",
                params,
            ).fetchall()
        return [BrowseRow(self._memory(row), row["device_id"]) for row in rows]

    def purge(self, team_id: int, tags: Sequence[str] | None, *, dry_run: bool = False) -> PurgeCount:
        """One transaction; the memory rows are counted as they are deleted, under their row locks."""
        where = "team_id = %s" if tags is None else "team_id = %s AND container_tag = ANY(%s)"
        params: tuple[Any, ...] = (team_id,) if tags is None else (team_id, list(tags))
        with self.transaction(), self._connection() as db:
            if dry_run:
                counted = db.execute(
                    f"""SELECT count(*) AS memories, count(*) FILTER (WHERE status = 'current') AS current
                        FROM memories WHERE {where}""",
                    params,
                ).fetchone()
                jobs = db.execute(
                    f"SELECT count(*) AS n FROM memory_extract_jobs WHERE {where}", params
                ).fetchone()
            else:
                if tags is None:
                    self._changed("team", team_id)
                for tag in tags or ():
                    self._changed("space", team_id, tag)
                counted = db.execute(
                    f"""WITH gone AS (DELETE FROM memories WHERE {where} RETURNING status)
                        SELECT count(*) AS memories, count(*) FILTER (WHERE status = 'current') AS current
                        FROM gone""",
                    params,
                ).fetchone()
                jobs = db.execute(
                    f"WITH gone AS (DELETE FROM memory_extract_jobs WHERE {where} RETURNING 1) "
                    "SELECT count(*) AS n FROM gone",
                    params,
                ).fetchone()
        assert counted is not None and jobs is not None
        return PurgeCount(
            memories=int(counted["memories"]), current=int(counted["current"]), jobs=int(jobs["n"])
        )

    def insert_version(self, row: NewVersion) -> str:
        memory_id = new_id("mem")
        if row.vector is not None and row.vector_model is not None:
            self._ensure_vector_index(row.vector_model, int(row.vector.shape[0]))
        with self.transaction(), self._connection() as db:
            self._changed("memory", row.team_id, row.container_tag, memory_id)
            db.execute(
                """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                       status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                       created_at, updated_at, embedding, embedding_model)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, 'current', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
                version_values(memory_id, row, None if row.vector is None else row.vector.astype("float32")),
            )
        return memory_id

    def retire(self, memory_id: str, status: Literal["superseded", "forgotten"]) -> bool:
        with self.transaction(), self._connection() as db:
            retired = db.execute(
                """UPDATE memories SET status = %s, superseded_at = %s WHERE id = %s AND status = 'current'
                   RETURNING team_id, container_tag""",
                (status, now_s(), memory_id),
            ).fetchone()
            if retired is None:
                return False
            self._changed("memory", retired["team_id"], retired["container_tag"], memory_id)
            return True

    def expired_documents(self, key_prefix: str, before: float, limit: int) -> list[tuple[int, Memory]]:
        with self._connection() as db:
            rows = db.execute(
                f"""SELECT {MEMORY_COLUMNS} FROM memories WHERE kind = 'document' AND status = 'current'
                    AND created_at < %s AND custom_id >= %s AND custom_id < %s ORDER BY created_at, seq LIMIT %s""",
                (before, key_prefix, key_prefix + "\U0010ffff", limit),
            ).fetchall()
        return [(int(row["team_id"]), self._memory(row)) for row in rows]
