"""The memory service's in-memory search indexes, one pair per space (team, tag).

- The keyword index (`door/keyword.py`) of a space's current memories: BM25 with feedback, and the
  save order that context needs.
- The vectors of a space's current memories: below ANN_MIN_VECTORS a matrix (`SpaceVectors`),
  searched exactly with numpy; from ANN_MIN_VECTORS on an HNSW graph (`ApproximateVectors`, usearch,
  8-bit vectors), built single-threaded in save order so that the same rows give the same
  graph in every process. Why these, and the figures: docs/benchmarks.md ("A million memories").

Both are built from the store on first use (or read from a snapshot, `Snapshots`) and kept in step
with every write by the service, so a superseded or forgotten row can never be found. The service drops them all when a transaction rolls
back (they may hold rows the rollback undid). Another process's writes are applied in place when the
store can say which memories changed (`apply`; PostgreSQL's change log), else they drop the spaces
concerned (`drop`, `drop_team`) or all of them (`drop_all`).

Both hold at most SPACE_CACHE_MAX_SPACES spaces, least recently used out first: a search of a tag
nobody saved in costs a few KB, and must not cost them for ever.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import struct
import sys
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bli_memory.door.keyword import KeywordIndex
from bli_memory.door.store.base import IndexRow, OutsideChanges

if TYPE_CHECKING:
    import numpy as np

SpaceKey = tuple[int, str]
#: spaces whose keyword index and vector matrix stay in memory (least recently used out first).
SPACE_CACHE_MAX_SPACES = 512
#: a space with at least this many vectors is searched through the approximate index: exact search
#: costs about 3 ms per 10 000 rows, the HNSW graph about 1 ms at any size (docs/benchmarks.md).
ANN_MIN_VECTORS = 50_000
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
#: spaces of at least this many memories are written to the snapshot folder when the door stops, so
#: that the next start reads them instead of building them (a keyword index of 1 000 000 memories
#: takes about a minute to build, its HNSW graph tens of minutes).
SNAPSHOT_MIN_MEMORIES = 20_000
SNAPSHOT_FORMAT = 1
#: the array of a keyword snapshot file that holds its stamp's token (ASCII bytes)
SNAPSHOT_TOKEN_ARRAY = "snapshot_token"
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
        """The defaults, or positive whole numbers the environment gives instead."""

        def number(name: str, default: int) -> int:
            raw = env.get(name, "").strip()
            return int(raw) if raw.isdigit() and int(raw) > 0 else default

        return cls(
            number(ANN_MIN_VECTORS_ENV, ANN_MIN_VECTORS),
            number(SNAPSHOT_MIN_MEMORIES_ENV, SNAPSHOT_MIN_MEMORIES),
        )


#: the float32 vectors of current memories by id (`Store.vectors_of` for one team and model).
Fetch = Callable[[Sequence[str]], "dict[str, np.ndarray]"]

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
    """Every row's cosine, computed at once with `einsum` (see `MemoryService._vector_candidates`)."""

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


#: whether a snapshot matches the store: (its number of current memories, a sample of its ids, whether
#: it holds a given id) -> True when the store has that many current memories in the space, every
#: sampled id is one of them, and the space's most recently changed memory is held.
SnapshotCheck = Callable[[int, list[str], Callable[[str], bool]], bool]
#: ids of a snapshot checked against the store: the first, the last and evenly spaced ones between.
SNAPSHOT_SAMPLE_IDS = 64


def _sample(ids: list[str]) -> list[str]:
    if len(ids) <= SNAPSHOT_SAMPLE_IDS:
        return ids
    step = (len(ids) - 1) / (SNAPSHOT_SAMPLE_IDS - 1)
    return [ids[round(n * step)] for n in range(SNAPSHOT_SAMPLE_IDS)]


def space_file_stem(key: SpaceKey, model: str) -> str:
    """A file name for a space and vector model: the team, and digests of the tag and the model."""
    team_id, tag = key
    tag_digest = hashlib.sha256(tag.encode("utf-8")).hexdigest()[:16]
    model_digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:8]
    return f"{team_id}-{tag_digest}-{model_digest}"


def _is_sqlite(identity: str | None) -> bool:
    """Whether a snapshot folder's database is a SQLite file with a change log (`SqliteStore.index_identity`)."""
    return identity is not None and identity.startswith("sqlite:")


class Snapshots:
    """Index snapshots of big spaces in a private folder (next to a SQLite database, or the one a
    PostgreSQL door is given or keeps under its data folder).

    Each space has a keyword file, a graph file, its ids file and a `.json` stamp written last: the
    stamp names the space, the model, how many current memories the space held, the database
    (`identity`: the store's `ChangeLogStore.index_identity`; None for a store without a change
    log) and, for a store with a change log, the change counter the index reflects (`position`), plus a random
    token the keyword file holds too (a stamp and a file written by two doors at once do not pair).
    A snapshot is used only when its stamp is there, names this database and the store agrees
    (`SnapshotCheck`: the same count, a sample of its ids current, the most recently changed memory
    held: a snapshot of another database file at the same path fails).

    Both stores keep a change log (SQLite since schema v6), so stamps stay across writes
    (`tracks_changes`): a start applies the log from the stamp's position (every door's writes since,
    its own included) to the keyword index and, for a SQLite door, to the graph (the vectors of the
    memories that became current read from the store), or builds when the log was pruned past it.
    Without a change log the service calls :meth:`invalidate` before its first write, so a snapshot
    never outlives a write it lacks.
    Files are written to a temporary name, synced and renamed, 0600 in a 0700 folder.
    """

    def __init__(self, folder: Path, identity: Callable[[], str] | None = None) -> None:
        self.folder = folder
        self._identity = identity  # asked once, on first need (the store may be out of reach at start)
        self._identity_value: str | None = None
        self._valid = True  # until the first write (without a change log): stamps on disk may be used
        self._writing = threading.Lock()  # one writer of the folder's files at a time

    @property
    def tracks_changes(self) -> bool:
        """Whether stamps carry a change position (and stay valid across this door's writes)."""
        return self._identity is not None

    @property
    def identity(self) -> str | None:
        """The database the snapshots belong to (None: a SQLite file, the folder next to it)."""
        if self._identity is not None and self._identity_value is None:
            self._identity_value = self._identity()
        return self._identity_value

    def _path(self, key: SpaceKey, model: str, suffix: str) -> Path:
        return self.folder / f"{space_file_stem(key, model)}{suffix}"

    def refuse(self, key: SpaceKey, model: str, reason: str) -> None:
        """Say on stderr, in one line, why a space's snapshot is not used (it is built instead)."""
        sys.stderr.write(
            f"bli-memory-door: index snapshot {self._path(key, model, '.json')} not used ({reason});"
            " building the space's index from the store\n"
        )

    def stamp(self, key: SpaceKey, model: str) -> dict[str, Any] | None:
        """The stamp of a space's snapshot, if it may be used (a line on stderr when one is there
        but is not ours, is damaged or names another database)."""
        if not self._valid:
            return None
        path = self._path(key, model, ".json")
        try:
            text = path.read_bytes()
        except OSError:
            return None  # none yet
        try:
            stamp = json.loads(text.decode("utf-8"))
        except ValueError:
            self.refuse(key, model, "its stamp is not one this door wrote")
            return None
        if not isinstance(stamp, dict) or stamp.get("format") != SNAPSHOT_FORMAT:
            self.refuse(key, model, "its stamp is not one this door wrote")
            return None
        if stamp.get("team") != key[0] or stamp.get("tag") != key[1] or stamp.get("model") != model:
            self.refuse(key, model, "its stamp names another space or model")
            return None
        position = stamp.get("position")
        if position is None and stamp.get("database") is None and _is_sqlite(self.identity):
            # written before the file had a change log, by a door that removed its stamps before
            # writing: it reflects the file as it was when the log began (counter 0)
            position = 0
            stamp["database"], stamp["position"] = self.identity, position
        if stamp.get("database") != self.identity:
            self.refuse(key, model, "written for another database")
            return None
        if self.tracks_changes and (not isinstance(position, int) or isinstance(position, bool)):
            self.refuse(key, model, "its stamp holds no change position")
            return None
        if not isinstance(stamp.get("memories"), int):
            self.refuse(key, model, "its stamp is not one this door wrote")
            return None
        return stamp

    def invalidate(self) -> None:
        """Remove every stamp (before the first write of a door without a change log: the files no
        longer match)."""
        if not self._valid:
            return
        self._valid = False
        try:
            stamps = list(self.folder.glob("*.json"))
        except OSError:
            return
        for path in stamps:
            path.unlink(missing_ok=True)
        _sync_folder(self.folder)

    def read_keyword(self, key: SpaceKey, model: str, token: str | None = None) -> KeywordIndex:
        """The keyword index of a snapshot; raises ValueError saying why when its file is missing,
        damaged, holds arrays that do not fit together, or holds another token than the stamp's."""
        try:
            arrays = mapped_arrays(self._path(key, model, ".keyword.npz"))
            held = arrays.pop(SNAPSHOT_TOKEN_ARRAY, None)
            if token is not None and (held is None or bytes(held).decode("ascii", "replace") != token):
                raise ValueError("it is not the stamp's")
            return KeywordIndex.from_arrays(arrays)
        except ValueError:
            raise
        except Exception as error:  # a damaged or foreign file: never a crash, the space is built instead
            raise ValueError(" ".join(f"{type(error).__name__}: {error}".split())) from error

    def read_vectors(self, key: SpaceKey, model: str, dim: int) -> ApproximateVectors | None:
        from usearch.index import Index

        try:
            ids_text = self._path(key, model, ".ids").read_text("utf-8")
            graph = Index.restore(str(self._path(key, model, ".usearch")))
        except (OSError, ValueError, RuntimeError):
            return None
        if graph is None or graph.ndim != dim:
            return None
        ids: list[str | None] = [memory_id or None for memory_id in ids_text.split("\n")] if ids_text else []
        vectors = ApproximateVectors(dim, graph, ids)
        if len(graph) != len(vectors):
            return None
        return vectors

    def holds(
        self, key: SpaceKey, model: str, position: int | None, memories: int, vectors: int | None
    ) -> bool:
        """Whether the snapshot on disk already is this one: written for this database at the same
        change position, with as many memories and the same graph. Only a store with a change log
        can say so (`position`); a door without one always writes."""
        if position is None or self.identity is None:
            return False
        try:
            stamp = json.loads(self._path(key, model, ".json").read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            return False
        return (
            isinstance(stamp, dict)
            and stamp.get("format") == SNAPSHOT_FORMAT
            and stamp.get("database") == self.identity
            and stamp.get("position") == position
            and stamp.get("memories") == memories
            and stamp.get("vectors") == vectors
            and all(self._path(key, model, suffix).exists() for suffix in self._files(vectors))
        )

    def _files(self, vectors: int | None) -> tuple[str, ...]:
        return (".keyword.npz",) if vectors is None else (".keyword.npz", ".ids", ".usearch")

    def write(
        self,
        key: SpaceKey,
        model: str,
        index: KeywordIndex,
        vectors: ApproximateVectors | None,
        position: int | None = None,
    ) -> None:
        """Write one space's snapshot: the old stamp goes first, the new one last."""
        self.write_arrays(key, model, index.to_arrays(), len(index), vectors, position)

    def write_arrays(
        self,
        key: SpaceKey,
        model: str,
        arrays: dict[str, np.ndarray],
        memories: int,
        vectors: ApproximateVectors | None,
        position: int | None,
    ) -> None:
        """Write one space's snapshot from its keyword index's arrays (`KeywordIndex.to_arrays`,
        taken while nothing changed it), of `memories` memories, reflecting the store's changes up
        to `position` (a store with a change log)."""
        import numpy as np

        token = secrets.token_hex(16)
        with self._writing:
            _private_folder(self.folder)
            _remove_stale_temporaries(self.folder)
            self._path(key, model, ".json").unlink(missing_ok=True)
            _sync_folder(self.folder)
            keyword_path = self._path(key, model, ".keyword.npz")
            with _private_temporary(keyword_path) as handle:
                token_array = np.frombuffer(token.encode("ascii"), dtype=np.uint8)
                np.savez(handle, **arrays, **{SNAPSHOT_TOKEN_ARRAY: token_array})  # type: ignore[arg-type]
            if vectors is not None:
                with _private_temporary(self._path(key, model, ".ids")) as handle:
                    handle.write("\n".join(memory_id or "" for memory_id in vectors.ids).encode("utf-8"))
                graph_path = self._path(key, model, ".usearch")
                temporary = _temporary_name(graph_path)
                vectors.graph.save(str(temporary))
                os.chmod(temporary, 0o600)
                _fsync_file(temporary)
                os.replace(temporary, graph_path)
            else:
                self._path(key, model, ".usearch").unlink(missing_ok=True)
                self._path(key, model, ".ids").unlink(missing_ok=True)
            stamp = {
                "format": SNAPSHOT_FORMAT,
                "team": key[0],
                "tag": key[1],
                "model": model,
                "memories": memories,
                "vectors": None if vectors is None else len(vectors),
                "database": self.identity,
                "position": position,
                "token": token,
            }
            with _private_temporary(self._path(key, model, ".json")) as handle:
                handle.write(json.dumps(stamp).encode("utf-8"))
            _sync_folder(self.folder)
        self._valid = True


def _private_folder(folder: Path) -> None:
    """Make `folder` (and any missing parent) 0700; an existing `folder` is made 0700 too."""
    missing = [parent for parent in (folder, *folder.parents) if not parent.exists()]
    for parent in reversed(missing):
        with contextlib.suppress(FileExistsError):
            parent.mkdir(mode=0o700)
    os.chmod(folder, 0o700)


#: a zip member's local header: signature, versions, flags, method, time, date, crc, sizes, name and
#: extra lengths (the name and extra field follow it, then the member's bytes)
_ZIP_LOCAL_HEADER = struct.Struct("<4s5H3I2H")


def mapped_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an uncompressed `.npz` (what `np.savez` writes), each memory-mapped read-only
    where it lies in the file: nothing is read until used, and the pages are the file's, shared and
    dropped under memory pressure. Raises ValueError for a member that is compressed, holds objects
    or is not an array."""
    import numpy as np

    arrays: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as archive, open(path, "rb") as handle:
        for member in archive.infolist():
            if member.compress_type != zipfile.ZIP_STORED or not member.filename.endswith(".npy"):
                raise ValueError(f"not an uncompressed array: {member.filename}")
            handle.seek(member.header_offset)
            header = _ZIP_LOCAL_HEADER.unpack(handle.read(_ZIP_LOCAL_HEADER.size))
            if header[0] != b"PK\x03\x04":
                raise ValueError("a damaged archive")
            handle.seek(member.header_offset + _ZIP_LOCAL_HEADER.size + header[9] + header[10])
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
            else:
                raise ValueError(f"an array format this door does not read: {version}")
            if dtype.hasobject or fortran or len(shape) != 1:
                raise ValueError(f"not a flat array of numbers: {member.filename}")
            name = member.filename[: -len(".npy")]
            if shape[0] == 0:
                arrays[name] = np.zeros(0, dtype=dtype)
            else:
                arrays[name] = np.memmap(handle, dtype=dtype, mode="r", offset=handle.tell(), shape=shape)
    return arrays


def _temporary_name(path: Path) -> Path:
    """Where this process writes `path` before renaming it: a name of its own (`NAME.PID.tmp`), so
    that two doors writing one folder at once never write into one file."""
    return path.with_name(f"{path.name}.{os.getpid()}.tmp")


#: a temporary file this door writes: a space's stem, the file's kind, the writer's pid
_TEMPORARY_NAME = re.compile(r"\d+-[0-9a-f]{16}-[0-9a-f]{8}\.(?:json|keyword\.npz|ids|usearch)\.(\d+)\.tmp")


def _remove_stale_temporaries(folder: Path) -> None:
    """Remove the temporary files of writers no longer running (a door killed while writing); any
    other file is left alone."""
    try:
        names = [path.name for path in folder.glob("*.tmp")]
    except OSError:
        return
    for name in names:
        match = _TEMPORARY_NAME.fullmatch(name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            (folder / name).unlink(missing_ok=True)
        except OSError:
            pass  # running, as another user: not ours to remove


class _private_temporary:
    """A 0600 file written under a temporary name, synced and renamed onto `path` on success."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.temporary = _temporary_name(path)

    def __enter__(self) -> Any:
        descriptor = os.open(self.temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.handle = os.fdopen(descriptor, "wb")
        return self.handle

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is None:
            self.handle.flush()
            os.fsync(self.handle.fileno())
        self.handle.close()
        if kind is None:
            os.replace(self.temporary, self.path)
        else:
            self.temporary.unlink(missing_ok=True)


def _fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync_file(folder)


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
        if not current(len(index), _sample([i for i in index.ids if i is not None]), held.__contains__):
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
        sample = _sample([i for i in vectors.ids if i is not None])
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
