"""The memory service's in-memory search indexes, one pair per space (team, tag).

- The keyword index (`door/keyword.py`) of a space's current memories: BM25 with feedback, and the
  save order that context needs.
- The vector matrix of a space's current vectors (`SpaceVectors`), searched exactly with numpy.

Both are built from the store on first use and kept in step with every write by the service, so a
superseded or forgotten row can never be found. The service drops them all when a transaction rolls
back (they may hold rows the rollback undid) and when another process wrote to the store.

Both hold at most SPACE_CACHE_MAX_SPACES spaces, least recently used out first: a search of a tag
nobody saved in costs a few KB, and must not cost them for ever.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

from bli_memory.door import keyword
from bli_memory.door.store.base import IndexRow

if TYPE_CHECKING:
    import numpy as np

SpaceKey = tuple[int, str]
#: spaces whose keyword index and vector matrix stay in memory (least recently used out first).
SPACE_CACHE_MAX_SPACES = 512

_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class Lru(Generic[_Key, _Value]):
    """A dict that keeps at most `cap` entries, dropping the least recently used. Thread-safe."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._items: OrderedDict[_Key, _Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key) -> _Value | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def peek(self, key: _Key) -> _Value | None:
        """The entry, without counting as a use."""
        with self._lock:
            return self._items.get(key)

    def put(self, key: _Key, value: _Value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.cap:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


class SpaceVectors:
    """The current vectors of one space, in memory: row i of `matrix` is `ids[i]`.

    Rows live in a buffer that doubles when full, so a save appends in amortised O(dim) instead of
    copying the whole matrix (150 MB at 100 000 memories); a removal moves the last row into the gap.
    """

    def __init__(self, ids: list[str], matrix: np.ndarray) -> None:
        self.ids = ids
        self._buffer = matrix
        self.index = {memory_id: row for row, memory_id in enumerate(ids)}

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

    def add(self, memory_id: str, vector: np.ndarray) -> None:
        import numpy as np

        count = len(self.ids)
        if count == self._buffer.shape[0]:
            grown = np.zeros((max(16, 2 * count), self._buffer.shape[1]), dtype=np.float32)
            grown[:count] = self._buffer[:count]
            self._buffer = grown
        self._buffer[count] = vector
        self.ids.append(memory_id)
        self.index[memory_id] = count

    def remove(self, memory_id: str) -> None:
        row = self.index.pop(memory_id, None)
        if row is None:
            return
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self._buffer[row] = self._buffer[last]
            self.ids[row] = moved
            self.index[moved] = row
        self.ids.pop()


class Indexes:
    """Every space's keyword index and vector matrix that has been built, by (team, tag).

    Not thread-safe by itself: the memory service calls it under its lock.
    """

    def __init__(self, max_spaces: int | None = None) -> None:
        cap = SPACE_CACHE_MAX_SPACES if max_spaces is None else max_spaces
        self._keyword: Lru[SpaceKey, keyword.KeywordIndex] = Lru(cap)
        self._vectors: Lru[SpaceKey, SpaceVectors] = Lru(cap)

    @property
    def max_spaces(self) -> int:
        return self._keyword.cap

    def drop_all(self) -> None:
        self._keyword.clear()
        self._vectors.clear()

    def keyword(self, key: SpaceKey, rows: Callable[[], Iterable[IndexRow]]) -> keyword.KeywordIndex:
        """The keyword index of a space, built from `rows()` on first use."""
        index = self._keyword.get(key)
        if index is None:
            built = ((row.id, row.content, row.device_id, row.updated_at) for row in rows())
            index = keyword.KeywordIndex.build(built)
            self._keyword.put(key, index)
        return index

    def vectors(
        self, key: SpaceKey, rows: Callable[[], Iterator[tuple[str, np.ndarray]]], dim: int
    ) -> SpaceVectors:
        """The vector matrix of a space, loaded from `rows()` on first use."""
        cached = self._vectors.get(key)
        if cached is None:
            cached = SpaceVectors.load(rows(), dim)
            self._vectors.put(key, cached)
        return cached

    def added(
        self,
        key: SpaceKey,
        memory_id: str,
        content: str,
        device_id: str | None,
        when: float,
        vector: np.ndarray | None,
    ) -> None:
        """A current row was written: add it to the indexes already built (the others build later)."""
        index = self._keyword.peek(key)
        if index is not None:
            index.add(memory_id, content, device_id, when)
        matrix = self._vectors.peek(key)
        if matrix is not None and vector is not None:
            matrix.add(memory_id, vector)

    def vector_set(self, key: SpaceKey, memory_id: str, vector: np.ndarray) -> None:
        matrix = self._vectors.peek(key)
        if matrix is not None:
            matrix.add(memory_id, vector)

    def removed(self, key: SpaceKey, memory_id: str) -> None:
        """A row stopped being current: take it out of every index."""
        index = self._keyword.peek(key)
        if index is not None:
            index.remove(memory_id)
        matrix = self._vectors.peek(key)
        if matrix is not None:
            matrix.remove(memory_id)
