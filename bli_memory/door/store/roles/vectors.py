"""The vectors role: each memory's vector of the embedder in use, written later than its row (the
backfill) and read whole by the door's in-memory index or searched by the store itself."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from bli_memory.door.store.base import VectorTask

if TYPE_CHECKING:
    import numpy as np


class VectorStore(Protocol):
    """Vectors of current memories, by embedding model."""

    def vectors_missing(self, model: str, limit: int) -> list[VectorTask]:
        """Current memories without a vector of `model`."""
        ...

    def set_vector(self, memory_id: str, content_hash: str, model: str, vector: np.ndarray) -> bool:
        """Store a vector if the row is still current with that text; False otherwise."""
        ...

    def current_vectors(self, team_id: int, tag: str, model: str) -> Iterator[tuple[str, np.ndarray]]:
        """(id, vector) of every current memory of one tag that has a vector of `model`, in save
        order."""
        ...

    def nearest(
        self, team_id: int, tag: str, model: str, query: np.ndarray, k: int
    ) -> list[tuple[str, float]] | None:
        """The `k` current memories of one tag whose `model` vectors are closest to `query`, as (id,
        cosine similarity), best first, equal similarities by id. None: this store leaves vector
        search to the door's in-memory index (`door/indexes.py`)."""
        ...

    def similarities(
        self, team_id: int, model: str, query: np.ndarray, ids: Sequence[str]
    ) -> dict[str, float] | None:
        """The cosine similarity to `query` of each current memory among `ids` that has a `model`
        vector (a store that answers `nearest`: the other channels' candidates get theirs too). None
        where `nearest` is None."""

    def vectors_of(self, team_id: int, ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        """The vectors of `model` of those of `ids` that are the team's current memories and have one
        (the exact float32 cosines of a big space's graph candidates, door/indexes.py)."""
        ...
