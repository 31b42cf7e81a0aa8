"""The PostgreSQL store's vectors role (`roles/vectors.py`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from bli_memory.door.store.base import (
    VectorTask,
)
from bli_memory.door.store.postgres.schema import vector_cast
from bli_memory.door.store.roles.vectors import VectorStore

if TYPE_CHECKING:
    import numpy as np

    Connection = psycopg.Connection[dict[str, Any]]
from bli_memory.door.store.postgres.connection import (
    PostgresConnection,
    vector_array,
)


class PostgresVectors(PostgresConnection, VectorStore):
    """Vectors in pgvector columns, searched by one HNSW index per model (`nearest`)."""

    def vectors_missing(self, model: str, limit: int) -> list[VectorTask]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT id, team_id, container_tag, content, content_hash FROM memories
                   WHERE status = 'current' AND pinned = 0 AND (embedding_model IS NULL OR embedding_model <> %s)
                   ORDER BY seq LIMIT %s""",
                (model, limit),
            ).fetchall()
        return [
            VectorTask(
                row["id"], int(row["team_id"]), row["container_tag"], row["content"], row["content_hash"]
            )
            for row in rows
        ]

    def set_vector(self, memory_id: str, content_hash: str, model: str, vector: np.ndarray) -> bool:
        self._ensure_vector_index(model, int(vector.shape[0]))
        with self.transaction(), self._connection() as db:
            changed = db.execute(
                """UPDATE memories SET embedding = %s, embedding_model = %s
                   WHERE id = %s AND status = 'current' AND content_hash = %s RETURNING team_id, container_tag""",
                (vector.astype("float32"), model, memory_id, content_hash),
            ).fetchone()
            if changed is None:
                return False
            self._changed("memory", changed["team_id"], changed["container_tag"], memory_id)
            return True

    def current_vectors(self, team_id: int, tag: str, model: str) -> Iterator[tuple[str, np.ndarray]]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT id, embedding FROM memories WHERE team_id = %s AND container_tag = %s
                   AND status = 'current' AND pinned = 0 AND embedding IS NOT NULL AND embedding_model = %s
                   ORDER BY seq""",
                (team_id, tag, model),
            ).fetchall()
        for row in rows:
            yield row["id"], vector_array(row["embedding"])

    def vectors_of(self, team_id: int, ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        with self._connection() as db:
            rows = db.execute(
                """SELECT id, embedding FROM memories WHERE team_id + 0 = %s AND id = ANY(%s)
                   AND status || '' = 'current' AND embedding IS NOT NULL AND embedding_model = %s""",
                (team_id, unique, model),
            ).fetchall()
        return {row["id"]: vector_array(row["embedding"]) for row in rows}

    def nearest(
        self, team_id: int, tag: str, model: str, query: np.ndarray, k: int
    ) -> list[tuple[str, float]] | None:
        """From the model's HNSW index; where the space's rows are too few among the model's for the
        index's candidates to hold k of them, exactly over the space (its rows by the space index)."""
        if k <= 0:
            return []
        dim = int(query.shape[0])
        self._ensure_vector_index(model, dim)
        cast = sql.SQL(vector_cast(dim))
        distance = sql.SQL("{} <=> %(q)s::vector({})").format(cast, sql.SQL(str(dim)))
        where = sql.SQL(
            "WHERE embedding_model = {} AND status = 'current' AND pinned = 0 AND team_id = %(team)s "
            "AND container_tag = %(tag)s"
        ).format(sql.Literal(model))
        approximate = sql.SQL("SELECT id, 1 - ({d}) AS similarity FROM memories {w} ORDER BY {d} LIMIT %(k)s")
        exact = sql.SQL("SELECT id, 1 - ({d}) AS similarity FROM memories {w} ORDER BY ({d}) + 0 LIMIT %(k)s")
        params = {"q": query.astype("float32"), "team": team_id, "tag": tag, "k": k}
        with self._connection() as db:
            rows = db.execute(approximate.format(d=distance, w=where), params).fetchall()
            if len(rows) < k:
                rows = db.execute(exact.format(d=distance, w=where), params).fetchall()
        found = [(str(row["id"]), float(row["similarity"])) for row in rows]
        return sorted(found, key=lambda pair: (-pair[1], pair[0]))

    def similarities(
        self, team_id: int, model: str, query: np.ndarray, ids: Sequence[str]
    ) -> dict[str, float] | None:
        dim = int(query.shape[0])
        statement = sql.SQL(
            "SELECT id, 1 - ({} <=> %s::vector({})) AS similarity FROM memories WHERE id = ANY(%s) "
            "AND team_id + 0 = %s AND status || '' = 'current' AND pinned = 0 AND embedding_model = %s"
        ).format(sql.SQL(vector_cast(dim)), sql.SQL(str(dim)))
        with self._connection() as db:
            rows = db.execute(statement, (query.astype("float32"), list(ids), team_id, model)).fetchall()
        return {str(row["id"]): float(row["similarity"]) for row in rows}
