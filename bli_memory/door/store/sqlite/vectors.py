"""The SQLite store's vectors role (`roles/vectors.py`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from bli_memory.door.store.base import (
    VectorTask,
)
from bli_memory.door.store.roles.vectors import VectorStore

if TYPE_CHECKING:
    import numpy as np
from bli_memory.door.store.sqlite.connection import (
    SqliteConnection,
)


class SqliteVectors(SqliteConnection, VectorStore):
    """Vectors as float32 blobs on their rows, read whole by the door's in-memory index (`nearest` is None
    here)."""

    def vectors_missing(self, model: str, limit: int) -> list[VectorTask]:
        with self._read():
            rows = self._db.execute(
                """SELECT id, team_id, container_tag, content, content_hash FROM memories
                   WHERE status = 'current' AND pinned = 0 AND (embedding_model IS NULL OR embedding_model != ?)
                   LIMIT ?""",
                (model, limit),
            ).fetchall()
        return [VectorTask(row[0], row[1], row[2], row[3], row[4]) for row in rows]

    def set_vector(self, memory_id: str, content_hash: str, model: str, vector: np.ndarray) -> bool:
        with self._statement():
            cursor = self._db.execute(
                """UPDATE memories SET embedding = ?, embedding_model = ?
                   WHERE id = ? AND status = 'current' AND content_hash = ?""",
                (vector.astype("float32").tobytes(), model, memory_id, content_hash),
            )
            if cursor.rowcount != 1:
                return False
            space = self._db.execute(
                "SELECT team_id, container_tag FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()
            self._changed("memory", space[0], space[1], memory_id)
            return True

    def current_vectors(self, team_id: int, tag: str, model: str) -> Iterator[tuple[str, np.ndarray]]:
        import numpy as np

        with self._read():
            rows = self._db.execute(
                """SELECT id, embedding FROM memories WHERE team_id = ? AND container_tag = ?
                   AND status = 'current' AND pinned = 0 AND embedding IS NOT NULL AND embedding_model = ?
                   ORDER BY rowid""",
                (team_id, tag, model),
            ).fetchall()
        for row in rows:
            yield row[0], np.frombuffer(row[1], dtype=np.float32)

    def nearest(
        self, team_id: int, tag: str, model: str, query: np.ndarray, k: int
    ) -> list[tuple[str, float]] | None:
        """None: the memory service searches this store's vectors in memory (`door/indexes.py`)."""
        return None

    def similarities(
        self, team_id: int, model: str, query: np.ndarray, ids: Sequence[str]
    ) -> dict[str, float] | None:
        return None

    def vectors_of(self, team_id: int, ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        import numpy as np

        select = "SELECT m.id, m.embedding, m.embedding_model FROM memories m"
        return {
            row[0]: np.frombuffer(row[1], dtype=np.float32)
            for row in self._current_rows_by_ids(select, team_id, list(dict.fromkeys(ids)))
            if row[1] is not None and row[2] == model
        }
