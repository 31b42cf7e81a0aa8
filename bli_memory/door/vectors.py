"""The vectors of one space in memory, and the cosines a search reads from them.

Below `IndexLimits.ann_min_vectors` a space's vectors are a matrix (`SpaceVectors`), searched
exactly with numpy; from there on an HNSW graph (`ApproximateVectors`, usearch, 8-bit vectors),
built single-threaded in save order so that the same rows give the same graph in every process.
Why these, and the figures: docs/benchmarks.md ("A million memories").

Separate from the indexes that hold them (`door/indexes.py`) and from their files on disk
(`door/snapshots.py`): this is only the arithmetic of one space's vectors, which knows nothing of
spaces, stores or folders, and the benchmarks (`scripts/bench_vector_index.py`) take its settings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: HNSW: neighbours per node, candidates kept while inserting, and while searching (at least the
#: VECTOR_CANDIDATES a search asks for). recall@10 against exact search: docs/benchmarks.md.
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 128
ANN_EXPANSION_SEARCH = 512
#: how the graph keeps its vectors: 8-bit (it only finds the rows; their cosines are the float32
#: ones from the store). At 100 000 vectors against float16: half the memory, half the build time,
#: a quarter of the search time, recall@10 0.971 against 0.975 (docs/benchmarks.md).
ANN_DTYPE = "i8"
#: vectors added to a graph per call while building it (one thread, save order).
ANN_BUILD_BATCH = 4096

#: the float32 vectors of current memories by id (`Store.vectors_of` for one team and model).
Fetch = Callable[[Sequence[str]], "dict[str, np.ndarray]"]


class SpaceVectors:
    """The current vectors of one space, in memory: row i of `matrix` is `ids[i]`.

    Rows live in a buffer that doubles when full, so a save appends in amortised O(dim) instead of
    copying the whole matrix (150 MB at 100 000 memories); a removal moves the last row into the gap.
    """

    def __init__(self, ids: list[str], matrix: np.ndarray) -> None:
        self.ids = ids
        self._buffer = matrix
        self.dim = int(matrix.shape[1])
        self.index = {memory_id: row for row, memory_id in enumerate(ids)}
        #: per id: when it was added (save order; the matrix's order changes with removals)
        self.sequence = {memory_id: number for number, memory_id in enumerate(ids)}
        self._added = len(ids)

    @classmethod
    def load(cls, rows: Iterable[tuple[str, np.ndarray]], dim: int) -> SpaceVectors:
        """From (id, vector) pairs; a vector of another width (a corrupt blob) is left out."""
        import numpy as np

        pairs = [(memory_id, vector) for memory_id, vector in rows if vector.shape == (dim,)]
        matrix = np.vstack([vector for _, vector in pairs]) if pairs else np.zeros((0, dim), dtype=np.float32)
        return cls(ids=[memory_id for memory_id, _ in pairs], matrix=matrix)

    @property
    def matrix(self) -> np.ndarray:
        return self._buffer[: len(self.ids)]

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query: np.ndarray, fetch: Fetch | None = None) -> ExactScores:
        return ExactScores(self, query)

    def add(self, memory_id: str, vector: np.ndarray) -> None:
        import numpy as np

        if memory_id in self.index:
            return
        count = len(self.ids)
        if count == self._buffer.shape[0]:
            grown = np.zeros((max(16, 2 * count), self._buffer.shape[1]), dtype=np.float32)
            grown[:count] = self._buffer[:count]
            self._buffer = grown
        self._buffer[count] = vector
        self.ids.append(memory_id)
        self.index[memory_id] = count
        self.sequence[memory_id] = self._added
        self._added += 1

    def vector(self, memory_id: str) -> np.ndarray:
        return self._buffer[self.index[memory_id]]

    def in_save_order(self) -> Iterator[tuple[str, np.ndarray]]:
        """(id, vector) of every row, in the order they were added."""
        for memory_id in sorted(self.ids, key=self.sequence.__getitem__):
            yield memory_id, self._buffer[self.index[memory_id]]

    def remove(self, memory_id: str) -> None:
        row = self.index.pop(memory_id, None)
        if row is None:
            return
        del self.sequence[memory_id]
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self._buffer[row] = self._buffer[last]
            self.ids[row] = moved
            self.index[moved] = row
        self.ids.pop()


class ExactScores:
    """Every row's cosine, computed at once with `einsum` (see `Candidates.vector_candidates` in `door/service/candidates.py`)."""

    def __init__(self, space: SpaceVectors, query: np.ndarray) -> None:
        import numpy as np

        self._space = space
        self._sims = np.einsum("ij,j->i", space.matrix, query)

    def nearest(self, count: int) -> list[tuple[str, float]]:
        import numpy as np

        sims = self._sims
        if not sims.size or count <= 0:
            return []
        count = min(count, sims.size)
        cut = -np.partition(-sims, count - 1)[count - 1]
        near = np.flatnonzero(sims >= cut)
        ids = self._space.ids
        return list(zip([ids[i] for i in near.tolist()], sims[near].tolist(), strict=True))

    def similarities(self, ids: Sequence[str]) -> dict[str, float]:
        index = self._space.index
        return {memory_id: float(self._sims[index[memory_id]]) for memory_id in ids if memory_id in index}


class ApproximateVectors:
    """The current vectors of one big space in an HNSW graph (usearch, cosine, 8-bit vectors).

    Key k is the k-th vector added (`ids[k]`, None once removed): keys are never reused. Built and
    grown on one thread in save order, so the same rows saved in the same order make the same graph.
    """

    def __init__(self, dim: int, index: Any = None, ids: list[str | None] | None = None) -> None:
        from usearch.index import Index

        self.dim = dim
        self.graph = index or Index(
            ndim=dim,
            metric="cos",
            dtype=ANN_DTYPE,
            connectivity=ANN_CONNECTIVITY,
            expansion_add=ANN_EXPANSION_ADD,
            expansion_search=ANN_EXPANSION_SEARCH,
        )
        self.graph.expansion_search = ANN_EXPANSION_SEARCH  # type: ignore[misc]  # a setter usearch's stubs miss
        self.ids: list[str | None] = ids or []
        self.key_of = {memory_id: key for key, memory_id in enumerate(self.ids) if memory_id is not None}

    @classmethod
    def build(cls, rows: Iterable[tuple[str, np.ndarray]], dim: int) -> ApproximateVectors:
        """From (id, vector) pairs in save order; a vector of another width is left out."""
        import numpy as np

        built = cls(dim)
        batch_ids: list[str] = []
        batch: list[np.ndarray] = []

        def flush() -> None:
            first = len(built.ids)
            keys = np.arange(first, first + len(batch_ids), dtype=np.uint64)
            built.graph.add(keys, np.vstack(batch).astype(np.float32), threads=1)
            for offset, memory_id in enumerate(batch_ids):
                built.ids.append(memory_id)
                built.key_of[memory_id] = first + offset
            batch_ids.clear()
            batch.clear()

        for memory_id, vector in rows:
            if vector.shape != (dim,) or memory_id in built.key_of:
                continue
            batch_ids.append(memory_id)
            batch.append(vector)
            if len(batch_ids) >= ANN_BUILD_BATCH:
                flush()
        if batch_ids:
            flush()
        return built

    def __len__(self) -> int:
        return len(self.key_of)

    def add(self, memory_id: str, vector: np.ndarray) -> None:
        import numpy as np

        if memory_id in self.key_of or vector.shape != (self.dim,):
            return
        key = len(self.ids)
        self.graph.add(np.uint64(key), vector.astype(np.float32), threads=1)
        self.ids.append(memory_id)
        self.key_of[memory_id] = key

    def remove(self, memory_id: str) -> None:
        key = self.key_of.pop(memory_id, None)
        if key is None:
            return
        self.graph.remove(key)
        self.ids[key] = None

    def scores(self, query: np.ndarray, fetch: Fetch | None = None) -> ApproximateScores:
        if fetch is None:
            raise ValueError("a graph's cosines need the rows' vectors")
        return ApproximateScores(self, query, fetch)


class ApproximateScores:
    """The graph's nearest rows, scored with their float32 vectors from the store (`fetch`) and
    `einsum`, exactly as `ExactScores` scores them: a row's cosine does not depend on the index."""

    def __init__(self, space: ApproximateVectors, query: np.ndarray, fetch: Fetch) -> None:
        import numpy as np

        self._space = space
        self._query = query.astype(np.float32)
        self._fetch = fetch
        self._known: dict[str, float] = {}

    def _score(self, ids: Sequence[str]) -> None:
        import numpy as np

        wanted = [
            memory_id for memory_id in ids if memory_id not in self._known and memory_id in self._space.key_of
        ]
        if not wanted:
            return
        vectors = self._fetch(wanted)
        held = [
            memory_id
            for memory_id in wanted
            if memory_id in vectors and vectors[memory_id].shape == self._query.shape
        ]
        if not held:
            return
        matrix = np.vstack([vectors[memory_id] for memory_id in held])
        cosines: list[float] = np.einsum("ij,j->i", matrix, self._query).tolist()
        self._known.update(zip(held, cosines, strict=True))

    def nearest(self, count: int) -> list[tuple[str, float]]:
        import numpy as np

        if not len(self._space) or count <= 0:
            return []
        found = self._space.graph.search(self._query, min(count, len(self._space)), threads=1)
        ids = self._space.ids
        keys = [key for key in np.asarray(found.keys).tolist() if 0 <= key < len(ids)]
        near = [memory_id for key in keys if (memory_id := ids[key]) is not None]
        self._score(near)
        return [(memory_id, self._known[memory_id]) for memory_id in near if memory_id in self._known]

    def similarities(self, ids: Sequence[str]) -> dict[str, float]:
        self._score(ids)
        return {memory_id: self._known[memory_id] for memory_id in ids if memory_id in self._known}


Vectors = SpaceVectors | ApproximateVectors
