"""Index snapshots on disk: a big space's keyword index and graph, kept between runs of the door.

A keyword index of 1 000 000 memories takes about a minute to build, its HNSW graph tens of
minutes; a door that stops writes them to its index folder and the next start reads them back
instead (docs/door-operations.md). This module is the folder and its files: the stamps that say
what a snapshot reflects, and the private, synced, renamed-into-place writes. Separate from the
indexes in memory (`door/indexes.py`, which decides when a snapshot is read, replayed or written)
so that nothing about files, permissions or stamps lives beside the search structures, and so
that the folder never needs to know which store it belongs to: what differs between stores is
given to it (`Snapshots(identity=…, unstamped_position=…)`).
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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.door.keyword import KeywordIndex
from bli_memory.door.store.base import SpaceKey
from bli_memory.door.vectors import ApproximateVectors

if TYPE_CHECKING:
    import numpy as np

SNAPSHOT_FORMAT = 1
#: the array of a keyword snapshot file that holds its stamp's token (ASCII bytes)
SNAPSHOT_TOKEN_ARRAY = "snapshot_token"


#: whether a snapshot matches the store: (its number of current memories, a sample of its ids, whether
#: it holds a given id) -> True when the store has that many current memories in the space, every
#: sampled id is one of them, and the space's most recently changed memory is held.
SnapshotCheck = Callable[[int, list[str], Callable[[str], bool]], bool]
#: ids of a snapshot checked against the store: the first, the last and evenly spaced ones between.
SNAPSHOT_SAMPLE_IDS = 64


def sample_ids(ids: list[str]) -> list[str]:
    """The ids of a snapshot that are checked against the store (`SnapshotCheck`)."""
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

    def __init__(
        self,
        folder: Path,
        identity: Callable[[], str] | None = None,
        *,
        unstamped_position: int | None = None,
    ) -> None:
        """`identity` names the database (`ChangeLogStore.index_identity`; None for a store without a
        change log). `unstamped_position` is where a stamp naming neither database nor position
        stands: the change position a store's log began at, for a store whose log was added to a
        file that already had snapshots (0 for SQLite, whose log begins at 0 with the file's schema
        v6); None where such a stamp is another database's, to be refused."""
        self.folder = folder
        self._identity = identity  # asked once, on first need (the store may be out of reach at start)
        self._identity_value: str | None = None
        self._unstamped_position = unstamped_position
        self._valid = True  # until the first write (without a change log): stamps on disk may be used
        self._writing = threading.Lock()  # one writer of the folder's files at a time

    @property
    def tracks_changes(self) -> bool:
        """Whether stamps carry a change position (and stay valid across this door's writes)."""
        return self._identity is not None

    @property
    def identity(self) -> str | None:
        """The database the snapshots belong to (None: a store without a change log, whose folder
        is its own)."""
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
        if position is None and stamp.get("database") is None and self._unstamped_position is not None:
            # written before the file had a change log, by a door that removed its stamps before
            # writing: it reflects the file as it was when the log began
            position = self._unstamped_position
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
