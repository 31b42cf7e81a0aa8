"""The memory service's in-memory search indexes, one pair per space (team, tag).

- The keyword index (`door/keyword.py`) of a space's current memories: BM25 with feedback, and the
  save order that context needs.
- The vectors of a space's current memories (`door/vectors.py`): a matrix searched exactly, turned
  into an HNSW graph on a thread once it holds `IndexLimits.ann_min_vectors`.

Both are built from the store on first use (or read from a snapshot, `door/snapshots.py`) and kept in
step with every write by the service, so a superseded or forgotten row can never be found. The service
drops them all when a transaction rolls back (they may hold rows the rollback undid). Another
process's writes are applied in place when the store can say which memories changed (`apply`;
PostgreSQL's change log), else they drop the spaces concerned (`drop`, `drop_team`) or all of them
(`drop_all`).

Both hold at most SPACE_CACHE_MAX_SPACES spaces, least recently used out first: a search of a tag
nobody saved in costs a few KB, and must not cost them for ever.

This module ties the two together with their snapshots: when a space's index is built, read back
from its snapshot and caught up with the change log, or written out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from bli_memory.door.keyword import KeywordIndex
from bli_memory.door.snapshots import SnapshotCheck, Snapshots, sample_ids
from bli_memory.door.store.base import IndexRow, OutsideChanges, SpaceKey
from bli_memory.door.vectors import ANN_BUILD_BATCH, ApproximateVectors, SpaceVectors, Vectors

if TYPE_CHECKING:
    import numpy as np

#: spaces whose keyword index and vector matrix stay in memory (least recently used out first).
SPACE_CACHE_MAX_SPACES = 512
#: a space with at least this many vectors is searched through the approximate index: exact search
#: costs about 3 ms per 10 000 rows, the HNSW graph about 1 ms at any size (docs/benchmarks.md).
ANN_MIN_VECTORS = 50_000
#: spaces of at least this many memories are written to the snapshot folder when the door stops, so
#: that the next start reads them instead of building them (a keyword index of 1 000 000 memories
#: takes about a minute to build, its HNSW graph tens of minutes).
SNAPSHOT_MIN_MEMORIES = 20_000
#: environment variables that change the two sizes above for one door (tests use small ones).
ANN_MIN_VECTORS_ENV = "BLI_MEMORY_ANN_MIN_VECTORS"
SNAPSHOT_MIN_MEMORIES_ENV = "BLI_MEMORY_SNAPSHOT_MIN_MEMORIES"


@dataclass(frozen=True)
class IndexLimits:
    """From how many vectors a space gets a graph, and from how many memories a snapshot."""

    ann_min_vectors: int
    snapshot_min_memories: int

    @classmethod
    def default(cls) -> IndexLimits:
        return cls(ANN_MIN_VECTORS, SNAPSHOT_MIN_MEMORIES)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> IndexLimits:
        """The defaults, or positive whole numbers `env` gives instead. It reads only `env` (the
        door's configuration hands it the environment, a test its own mapping), never os.environ."""

        def number(name: str, default: int) -> int:
            raw = env.get(name, "").strip()
            return int(raw) if raw.isdigit() and int(raw) > 0 else default

        return cls(
            number(ANN_MIN_VECTORS_ENV, ANN_MIN_VECTORS),
            number(SNAPSHOT_MIN_MEMORIES_ENV, SNAPSHOT_MIN_MEMORIES),
        )


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

    def replace(self, key: _Key, value: _Value) -> None:
        """Change an entry's value without counting as a use (a no-op for a key not held)."""
        with self._lock:
            if key in self._items:
                self._items[key] = value

    def items(self) -> list[tuple[_Key, _Value]]:
        with self._lock:
            return list(self._items.items())

    def pop(self, key: _Key) -> _Value | None:
        with self._lock:
            return self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


class HeldSpaces:
    """The spaces whose keyword index or vectors are in memory, as they are when asked."""

    def __init__(self, keyword: Lru[SpaceKey, KeywordIndex], vectors: Lru[SpaceKey, Vectors]) -> None:
        self._keyword = keyword
        self._vectors = vectors

    def __contains__(self, key: object) -> bool:
        return self._keyword.peek(key) is not None or self._vectors.peek(key) is not None  # type: ignore[arg-type]

    def _keys(self) -> set[SpaceKey]:
        return {key for key, _ in self._keyword.items()} | {key for key, _ in self._vectors.items()}

    def __iter__(self) -> Iterator[SpaceKey]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


class Indexes:
    """Every space's keyword index and vectors that have been built, by (team, tag).

    Called by the memory service under its lock, which it shares (`lock`): a space's matrix that grows
    past ANN_MIN_VECTORS is turned into a graph on a background thread, and the graph replaces the
    matrix under this lock only after catching up with every write made meanwhile (searches go on
    exactly over the matrix until then).
    """

    def __init__(
        self,
        max_spaces: int | None = None,
        *,
        snapshots: Snapshots | None = None,
        lock: threading.RLock | None = None,
        limits: IndexLimits | None = None,
    ) -> None:
        cap = SPACE_CACHE_MAX_SPACES if max_spaces is None else max_spaces
        self.limits = limits or IndexLimits.default()
        self._keyword: Lru[SpaceKey, KeywordIndex] = Lru(cap)
        self._vectors: Lru[SpaceKey, Vectors] = Lru(cap)
        self.snapshots = snapshots
        self._lock = lock if lock is not None else threading.RLock()
        self._converting: dict[SpaceKey, threading.Thread] = {}
        #: keyword indexes built from the store's rows so far (not read from a snapshot)
        self.keyword_builds = 0
        #: a store with a change log: what changed after a position (`ChangeLogStore.changes_since`),
        #: applied to a snapshot read back before it is used
        self.replay: Callable[[int, Collection[SpaceKey]], OutsideChanges] | None = None
        #: the vectors of a space's memories by id, of a model (`Store.vectors_of`): what a graph
        #: read back from a snapshot takes in of the memories that became current after its position
        self.replay_vectors: Callable[[SpaceKey, Sequence[str], str], Mapping[str, np.ndarray]] | None = None
        #: told each space whose graph a thread finished building (outside the lock), so that its
        #: snapshot can be written while the door serves, not only when it stops
        self.on_graph_built: Callable[[SpaceKey], None] | None = None

    @property
    def max_spaces(self) -> int:
        return self._keyword.cap

    def drop_all(self) -> None:
        self._keyword.clear()
        self._vectors.clear()

    def held(self) -> HeldSpaces:
        """The spaces with a keyword index or vectors in memory (a view: asked only when another
        process wrote, which a search should not pay for otherwise)."""
        return HeldSpaces(self._keyword, self._vectors)

    def drop(self, key: SpaceKey) -> None:
        """Forget one space's indexes (rebuilt on its next use)."""
        self._keyword.pop(key)
        self._vectors.pop(key)

    def drop_team(self, team_id: int) -> None:
        for key in [key for key in self.held() if key[0] == team_id]:
            self.drop(key)

    def apply(self, key: SpaceKey, current: Sequence[IndexRow], gone: Sequence[str]) -> None:
        """Another process changed these memories of a space: `current` are searchable now (in save
        order), `gone` are not. The keyword index takes them in place (a no-op for what it already
        holds so); vectors in memory, which the rows here do not carry, are dropped when a memory
        became searchable (a store that searches vectors itself holds none)."""
        index = self._keyword.peek(key)
        if index is not None:
            for memory_id in gone:
                index.remove(memory_id)
            for row in current:
                index.add(row.id, row.content, row.device_id, row.updated_at)
        vectors = self._vectors.peek(key)
        if vectors is not None:
            if current:
                self._vectors.pop(key)
            else:
                for memory_id in gone:
                    vectors.remove(memory_id)

    def keyword(
        self,
        key: SpaceKey,
        rows: Callable[[], Iterable[IndexRow]],
        *,
        model: str = "",
        current: SnapshotCheck | None = None,
    ) -> KeywordIndex:
        """The keyword index of a space: from its snapshot when `current` says it matches the store,
        else built from `rows()`, on first use."""
        index = self._keyword.get(key)
        if index is None:
            index = self._snapshot_keyword(key, model, current)
            if index is None:
                built = ((row.id, row.content, row.device_id, row.updated_at) for row in rows())
                index = KeywordIndex.build(built)
                self.keyword_builds += 1
            self._keyword.put(key, index)
        return index

    def _snapshot_keyword(
        self, key: SpaceKey, model: str, current: SnapshotCheck | None
    ) -> KeywordIndex | None:
        if self.snapshots is None or current is None:
            return None
        stamp = self.snapshots.stamp(key, model)
        if stamp is None:
            return None
        token = stamp.get("token")
        try:
            index = self.snapshots.read_keyword(key, model, token if isinstance(token, str) else None)
        except ValueError as error:
            self.snapshots.refuse(key, model, f"its keyword file is damaged or not the stamp's: {error}")
            return None
        if len(index) != stamp["memories"]:
            self.snapshots.refuse(
                key, model, "its keyword file holds another number of memories than its stamp"
            )
            return None
        if self.snapshots.tracks_changes:
            caught_up = self.replay is not None and self._replay(key, index, stamp["position"])
            if not caught_up:
                self.snapshots.refuse(key, model, "the change log no longer reaches back to it")
                return None
        held = index.slot_of
        if not current(len(index), sample_ids([i for i in index.ids if i is not None]), held.__contains__):
            self.snapshots.refuse(key, model, "the store does not agree with it")
            return None
        return index

    def _replay(self, key: SpaceKey, index: KeywordIndex, position: int) -> bool:
        """Apply to a snapshot's `index` what the store's change log holds past `position` (every
        process's writes, idempotent for what it holds already); False when the log cannot say."""
        assert self.replay is not None
        changes = self.replay(position, (key,))
        if changes.everything or key in changes.spaces or key[0] in changes.teams:
            return False
        for memory_id in changes.gone.get(key, ()):
            index.remove(memory_id)
        for row in changes.current.get(key, ()):
            index.add(row.id, row.content, row.device_id, row.updated_at)
        return True

    def vectors(
        self,
        key: SpaceKey,
        rows: Callable[[], Iterator[tuple[str, np.ndarray]]],
        dim: int,
        *,
        model: str = "",
        current: SnapshotCheck | None = None,
    ) -> Vectors:
        """The vectors of a space, on first use: a snapshot's graph when current, else a matrix
        loaded from `rows()`, which a thread turns into a graph when it holds ANN_MIN_VECTORS or more
        (searched exactly until then: a graph of a million vectors takes tens of minutes to build)."""
        cached = self._vectors.get(key)
        if cached is not None:
            return cached
        graph = self._snapshot_vectors(key, model, dim, current)
        if graph is not None:
            self._vectors.put(key, graph)
            return graph
        matrix = SpaceVectors.load(rows(), dim)
        self._vectors.put(key, matrix)
        if len(matrix) >= self.limits.ann_min_vectors:
            self._start_conversion(key, matrix)
        return matrix

    def _snapshot_vectors(
        self, key: SpaceKey, model: str, dim: int, current: SnapshotCheck | None
    ) -> ApproximateVectors | None:
        if self.snapshots is None or current is None:
            return None
        stamp = self.snapshots.stamp(key, model)
        if stamp is None or stamp.get("vectors") is None:
            return None  # none, or a store that searches its vectors itself (no graph kept)
        vectors = self.snapshots.read_vectors(key, model, dim)
        if vectors is None or len(vectors) != stamp["vectors"]:
            return None
        memories = stamp["memories"]
        if self.snapshots.tracks_changes:
            if not self._replay_graph(key, model, vectors, stamp["position"]):
                return None
            keyword = self._keyword.peek(key)  # replayed from the same position: the count now
            if keyword is None:
                return None
            memories = len(keyword)
        sample = sample_ids([i for i in vectors.ids if i is not None])
        return vectors if current(memories, sample, lambda memory_id: True) else None

    def _replay_graph(self, key: SpaceKey, model: str, graph: ApproximateVectors, position: int) -> bool:
        """Apply to a snapshot's `graph` what the change log holds past `position`: memories no
        longer current leave it, those current now join it with their vectors of `model` read from
        the store (a no-op for those it holds); False when the log cannot say."""
        if self.replay is None or self.replay_vectors is None:
            return False
        changes = self.replay(position, (key,))
        if changes.everything or key in changes.spaces or key[0] in changes.teams:
            return False
        for memory_id in changes.gone.get(key, ()):
            graph.remove(memory_id)
        ids = [row.id for row in changes.current.get(key, ())]
        found = self.replay_vectors(key, ids, model) if ids else {}
        for memory_id in ids:
            vector = found.get(memory_id)
            if vector is not None:
                graph.add(memory_id, vector)
        return True

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
        if vector is not None:
            self.vector_set(key, memory_id, vector)

    def vector_set(self, key: SpaceKey, memory_id: str, vector: np.ndarray) -> None:
        vectors = self._vectors.peek(key)
        if vectors is None:
            return
        vectors.add(memory_id, vector)
        if (
            isinstance(vectors, SpaceVectors)
            and len(vectors) >= self.limits.ann_min_vectors
            and key not in self._converting
        ):
            self._start_conversion(key, vectors)

    def removed(self, key: SpaceKey, memory_id: str) -> None:
        """A row stopped being current: take it out of every index."""
        index = self._keyword.peek(key)
        if index is not None:
            index.remove(memory_id)
        vectors = self._vectors.peek(key)
        if vectors is not None:
            vectors.remove(memory_id)

    # ------------------------------------------------------------------ matrix to graph

    def _start_conversion(self, key: SpaceKey, matrix: SpaceVectors) -> None:
        """Turn `matrix` into a graph on a thread (call under the lock)."""
        order = sorted(matrix.ids, key=matrix.sequence.__getitem__)
        thread = threading.Thread(
            target=self._convert, args=(key, matrix, order), name="bli-memory-graph", daemon=True
        )
        self._converting[key] = thread
        thread.start()

    def _rows_of(
        self, key: SpaceKey, matrix: SpaceVectors, order: list[str]
    ) -> Iterator[tuple[str, np.ndarray]]:
        """The vectors of `order` that `matrix` still holds, copied ANN_BUILD_BATCH at a time under
        the lock (a write may move a row meanwhile), added to the graph outside it."""
        for start in range(0, len(order), ANN_BUILD_BATCH):
            with self._lock:
                if self._vectors.peek(key) is not matrix:
                    return  # dropped: nothing to build for
                batch = [
                    (memory_id, matrix.vector(memory_id).copy())
                    for memory_id in order[start : start + ANN_BUILD_BATCH]
                    if memory_id in matrix.index
                ]
            yield from batch

    def _convert(self, key: SpaceKey, matrix: SpaceVectors, order: list[str]) -> None:
        try:
            graph = ApproximateVectors.build(self._rows_of(key, matrix, order), matrix.dim)
        except Exception:  # the matrix goes on serving; the next start builds the graph
            with self._lock:
                self._converting.pop(key, None)
            return
        with self._lock:
            self._converting.pop(key, None)
            if self._vectors.peek(key) is not matrix:  # dropped or rebuilt meanwhile
                return
            for memory_id in [memory_id for memory_id in graph.key_of if memory_id not in matrix.index]:
                graph.remove(memory_id)
            for memory_id, vector in matrix.in_save_order():
                graph.add(memory_id, vector)  # a no-op for the rows it holds
            self._vectors.replace(key, graph)
        if self.on_graph_built is not None:
            self.on_graph_built(key)

    def wait_for_conversions(self, timeout_s: float) -> bool:
        """Wait until no matrix is being turned into a graph (tests); False when time ran out."""
        for thread in list(self._converting.values()):
            thread.join(timeout_s)
        return not any(thread.is_alive() for thread in list(self._converting.values()))

    # ------------------------------------------------------------------ snapshots

    def write_snapshots(self, model: str, position: int | None = None) -> int:
        """Write the snapshot of every space of SNAPSHOT_MIN_MEMORIES or more, reflecting the store's
        changes up to `position` (a store with a change log); how many were written."""
        if self.snapshots is None:
            return 0
        written = 0
        for key, index in self._keyword.items():
            if len(index) < self.limits.snapshot_min_memories:
                continue
            vectors = self._vectors.peek(key)
            graph = vectors if isinstance(vectors, ApproximateVectors) else None
            if self.snapshots.holds(key, model, position, len(index), None if graph is None else len(graph)):
                continue  # nothing changed since it was written or read: a million memories' rewrite is ~6 s
            self.snapshots.write(key, model, index, graph, position)
            written += 1
        return written

    def keyword_of(self, key: SpaceKey) -> KeywordIndex | None:
        """A space's keyword index if it is held, without building it (call under the lock)."""
        return self._keyword.peek(key)

    def graph(self, key: SpaceKey) -> ApproximateVectors | None:
        """The graph a space's vectors are searched through, if they are one (call under the lock)."""
        vectors = self._vectors.peek(key)
        return vectors if isinstance(vectors, ApproximateVectors) else None

    def big_spaces(self) -> int:
        """How many spaces held are big enough for a snapshot."""
        return sum(1 for _, index in self._keyword.items() if len(index) >= self.limits.snapshot_min_memories)

    def snapshot_arrays(self, key: SpaceKey) -> tuple[dict[str, np.ndarray], int] | None:
        """A big space's keyword index as the arrays its snapshot holds, and its size (call under
        the lock, so that no write changes it meanwhile); None when it is not held or is small."""
        index = self._keyword.peek(key)
        if index is None or len(index) < self.limits.snapshot_min_memories:
            return None
        return index.to_arrays(), len(index)
