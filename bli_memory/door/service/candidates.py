"""Candidates: the rows each channel of a search finds, read from the in-memory indexes.

The keyword channel (BM25 over a space's keyword index), the vector channel (a space's matrix or
graph, or the store's own vector index) and the save order every ranking breaks its ties by. The
indexes are built from the store on first use, or read back from their snapshots; every method that
reads them is called under the writer's lock.

Separate from the search itself so that what else reads the indexes (a forget's cut of an exchange,
the warm-up at start) uses the same channels without the fusion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from bli_memory.door import keyword, ranking
from bli_memory.door.indexes import Indexes
from bli_memory.door.service.writer import IndexedWriter
from bli_memory.door.snapshots import SnapshotCheck, Snapshots
from bli_memory.door.vectors import Vectors

if TYPE_CHECKING:
    import numpy as np

#: the cosines of memories by id (None: the memory has no vector), for a list of ids.
Similarities = Callable[[Sequence[str]], dict[str, float | None]]


def no_similarities(ids: Sequence[str]) -> dict[str, float | None]:
    return dict.fromkeys(ids)


def lasting_snapshots(indexes: Indexes) -> Snapshots | None:
    """The snapshot folder when its snapshots outlive this door's writes (a store with a change
    log, which they are replayed from), else None: such snapshots are worth writing while the
    door serves, and a graph read back from one is checked against the keyword index."""
    snapshots = indexes.snapshots
    return snapshots if snapshots is not None and snapshots.tracks_changes else None


class Candidates:
    """The search channels over `writer`'s indexes."""

    def __init__(self, writer: IndexedWriter) -> None:
        self.writer = writer
        self.store = writer.store
        self.indexes = writer.indexes
        #: whether the store searches vectors itself (`Store.nearest`); None until first asked.
        self._store_searches_vectors: bool | None = None

    def save_positions(
        self, team_id: int, tags: Sequence[str], memory_ids: Iterable[str]
    ) -> dict[str, ranking.SavePosition]:
        """Where each of `memory_ids` stands in save order (`ranking.SavePosition`), from the keyword
        indexes, whose slots are save order (call under the lock). The tie-break of every ranking:
        unlike an id, it is the same in every door that holds the same memories saved in the same order."""
        found: dict[str, ranking.SavePosition] = {}
        left = list(memory_ids)
        for number, tag in enumerate(tags):
            slot_of = self.keyword_index(team_id, tag).slot_of
            missing = []
            for memory_id in left:
                slot = slot_of.get(memory_id)
                if slot is None:
                    missing.append(memory_id)
                else:
                    found[memory_id] = (number, slot)
            left = missing
        for memory_id in left:  # not indexed (cannot happen for a current row): after all the rest
            found[memory_id] = (len(tags), 0)
        return found

    def keyword_candidates(
        self, team_id: int, tags: Sequence[str], terms: Sequence[keyword.Term]
    ) -> list[str]:
        """Ids of the best BM25 matches in the space for a query's keyword `terms`
        (`keyword.query_terms`), best first (call under the lock)."""
        if not terms:
            return []
        indexes = [self.keyword_index(team_id, tag) for tag in tags]
        return keyword.search_with_feedback(indexes, terms, ranking.KEYWORD_CANDIDATES)

    def term_worths(self, team_id: int, tags: Sequence[str], terms: Sequence[keyword.Term]) -> list[float]:
        """The idf of each of the query's keyword `terms` in the space, in their order
        (`keyword.term_worths`; call under the lock)."""
        if not terms:
            return []
        return keyword.term_worths([self.keyword_index(team_id, tag) for tag in tags], terms)

    def keyword_index(self, team_id: int, tag: str) -> keyword.KeywordIndex:
        """The keyword index of one tag's current memories, built on first use (call under the lock)."""
        return self.indexes.keyword(
            (team_id, tag),
            lambda: self.store.index_rows(team_id, tag),
            model=self.writer.vector_model or "",
            current=self._snapshot_check(team_id, tag),
        )

    def _snapshot_check(self, team_id: int, tag: str) -> SnapshotCheck:
        """Whether an index snapshot of one tag matches the store (`indexes.SnapshotCheck`)."""

        def check(count: int, sample: list[str], holds: Callable[[str], bool]) -> bool:
            if self.store.count_current(team_id, [tag]) != count:
                return False
            if len(self.store.updated_at(team_id, sample)) != len(set(sample)):
                return False
            newest = self.store.recent(team_id, [tag], 1)
            return not newest or holds(newest[0].id)

        return check

    def space_vectors(self, team_id: int, tag: str) -> Vectors | None:
        """One tag's current vectors (a matrix, or a graph for a big space), loaded on first use
        (call under the lock)."""
        model = self.writer.vector_model
        embedder = self.writer.embedder
        if model is None or embedder is None:
            return None
        if lasting_snapshots(self.indexes) is not None:
            # a graph read back from a snapshot is checked against the keyword index replayed from
            # the same position: without it loaded first (a forget by meaning as a space's first
            # request), the graph would be thrown away and built again
            self.keyword_index(team_id, tag)
        return self.indexes.vectors(
            (team_id, tag),
            lambda: self.store.current_vectors(team_id, tag, model),
            embedder.dim,
            model=model,
            current=self._snapshot_check(team_id, tag),
        )

    def nearest_in_store(self) -> bool:
        """Whether the store answers `nearest` itself (then no vector matrix is loaded in memory)."""
        model = self.writer.vector_model
        embedder = self.writer.embedder
        if model is None or embedder is None:
            return False
        if self._store_searches_vectors is None:
            import numpy as np

            probe = np.zeros(embedder.dim, dtype=np.float32)
            self._store_searches_vectors = self.store.nearest(0, "", model, probe, 0) is not None
        return self._store_searches_vectors

    def _store_nearest(
        self, team_id: int, tags: Sequence[str], query_vector: np.ndarray
    ) -> tuple[Similarities, list[str]]:
        """`vector_candidates` from the store's own vector index: each tag's nearest, merged, equal
        cosines in save order; any other row asked about (the keyword channel's) gets its cosine from
        the store too, as every row has one in the in-memory matrix."""
        model = self.writer.vector_model
        assert model is not None
        cosine: dict[str, float] = {}
        for tag in tags:
            cosine.update(
                self.store.nearest(team_id, tag, model, query_vector, ranking.VECTOR_CANDIDATES) or []
            )
        position = self.save_positions(team_id, tags, cosine)
        top = sorted(cosine, key=lambda memory_id: (-cosine[memory_id], position[memory_id]))

        def similarities(ids: Sequence[str]) -> dict[str, float | None]:
            found: dict[str, float | None] = {memory_id: cosine.get(memory_id) for memory_id in ids}
            missing = [memory_id for memory_id, value in found.items() if value is None]
            if missing:
                found.update(self.store.similarities(team_id, model, query_vector, missing) or {})
            return found

        return similarities, top[: ranking.VECTOR_CANDIDATES]

    def vector_candidates(
        self, team_id: int, tags: Sequence[str], query_vector: np.ndarray
    ) -> tuple[Similarities, list[str]]:
        """(the cosines of any memories of the space by id, the ids of the nearest VECTOR_CANDIDATES).

        The cosines are `einsum`'s, not a BLAS matrix-vector product's: BLAS sums a row in an order
        that depends on where the row sits in the matrix (a forget moves the last row into the gap,
        a restarted door loads rows in save order): the same row at two places gave cosines up to
        7e-9 apart, enough to swap near-tied rows between two doors. `einsum` sums each row alike wherever it
        sits (and measured no slower at 10 000-100 000 rows). Rows tied with the last one taken are
        all considered, and equal cosines are ordered by save order, not by their place in the matrix.
        A big space's graph (`indexes.ApproximateVectors`) gives its nearest rows, and the cosines are
        those of the rows' float32 vectors read from the store (`Store.vectors_of`), the same as an
        exact search's: the graph changes which rows are found, never a row's score.
        """
        import numpy as np

        if self.nearest_in_store():
            return self._store_nearest(team_id, tags, query_vector)
        spaces = [
            space for tag in tags if (space := self.space_vectors(team_id, tag)) is not None and len(space)
        ]
        if not spaces:
            return no_similarities, []
        query = query_vector.astype(np.float32)
        model = self.writer.vector_model or ""

        def fetch(ids: Sequence[str]) -> dict[str, np.ndarray]:
            return self.store.vectors_of(team_id, ids, model)

        scorers = [space.scores(query, fetch) for space in spaces]
        count = min(ranking.VECTOR_CANDIDATES, sum(len(space) for space in spaces))
        near = [pair for scorer in scorers for pair in scorer.nearest(count)]
        if len(near) > count:  # every row at least as close as the count-th, ties at the cut included
            cut = sorted((cosine for _, cosine in near), reverse=True)[count - 1]
            near = [(memory_id, cosine) for memory_id, cosine in near if cosine >= cut]
        position = self.save_positions(team_id, tags, [memory_id for memory_id, _ in near])
        top = sorted(near, key=lambda pair: (-pair[1], position[pair[0]]))[:count]

        def similarities(ids: Sequence[str]) -> dict[str, float | None]:
            found: dict[str, float | None] = dict.fromkeys(ids)
            for scorer in scorers:
                for memory_id, cosine in scorer.similarities([i for i in ids if found[i] is None]).items():
                    found[memory_id] = cosine
            return found

        return similarities, [memory_id for memory_id, _ in top]
