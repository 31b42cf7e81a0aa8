"""The indexed writer: the state every part of the memory service shares, and the only way a part
writes.

It holds the store, the embedder (with its outage handling and the backfill of the vectors an outage
left missing), the in-memory search indexes (`door/indexes.py`) and the lock that guards them. A
part inserts and retires rows through it, inside its `transaction()`, so that the indexes follow
every write.

Consistency of the indexes: every write goes through `transaction()`, which updates the indexes as
it writes and drops them all if the transaction rolls back. Before a search reads them, what other
processes wrote is applied (`Store.changes_elsewhere`, `check_outside_writes`): the changed memories
of the spaces held are added to or taken out of their indexes in place (PostgreSQL, whose change
log says which memories changed), and the spaces a store can only say changed wholesale are dropped
(all of them for SQLite, whose other writer is rare). Dropped indexes are rebuilt from the store on
their next use. The same is done before each write, so that this door's rows follow the others' in
the indexes' save order; only two doors writing into one space at the same moment can leave a door
holding two rows in commit order rather than the store's save order (a tie or a context neighbour
may then differ from a freshly built door's).

Locking: the writer's lock guards the indexes and is always taken before the store's own lock
(`transaction()` holds both), never after, so the two cannot deadlock.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from bli_memory.door.errors import Conflict, exception_line
from bli_memory.door.indexes import Indexes, IndexLimits
from bli_memory.door.model import Memory, Principal, hash_text, is_pinned_metadata, now_s
from bli_memory.door.snapshots import Snapshots
from bli_memory.door.store.base import NewVersion
from bli_memory.door.store.roles import Store
from bli_memory.door.store.roles.changes import ChangeLogStore

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from bli_memory.door.embed import Embedder, Kind

EMBED_ERROR_LOG_INTERVAL_S = 60.0
BACKFILL_BATCH = 64

Status = Literal["superseded", "forgotten"]


class IndexedWriter:
    """`store`, embedded with `embedder` (None or dimension 0: keyword and recency), with the indexes
    kept in step with every write made through it.

    With `index_folder`, the indexes of big spaces are written there when the service closes and read
    back by the next one instead of being built (`indexes.Snapshots`)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None = None,
        index_folder: Path | None = None,
        index_limits: IndexLimits | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.lock = threading.RLock()
        change_log = store if isinstance(store, ChangeLogStore) else None
        snapshots = (
            None
            if index_folder is None
            else Snapshots(
                index_folder,
                None if change_log is None else change_log.index_identity,
                unstamped_position=0
                if change_log is not None and change_log.unstamped_snapshots_at_log_start
                else None,
            )
        )
        self.indexes = Indexes(snapshots=snapshots, lock=self.lock, limits=index_limits)
        #: a store with a change log: snapshots are replayed from their stamp's position and stay
        #: valid across writes; big spaces built at start are written at once
        self.change_log = change_log
        if change_log is not None:
            self.indexes.replay = change_log.changes_since
            self.indexes.replay_vectors = lambda key, ids, model: store.vectors_of(key[0], ids, model)
        self._depth = 0  # transactions open through this writer (nested ones join the outermost)
        self._embed_error: tuple[float, str] | None = None
        self._embed_error_logged_at = 0.0
        #: set when rows may lack a vector of this embedder; the door's worker then backfills them.
        self.needs_backfill = embedder is not None and embedder.dim > 0
        #: vectors embedded ahead of a transaction (`prefetch`), by (text, kind)
        self._ready: dict[tuple[str, str], np.ndarray] = {}
        #: called when the tags that name a space may have changed (another process's aliases)
        self._on_aliases_changed: list[Callable[[], None]] = []

    def on_aliases_changed(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever another process may have changed the aliases (a part's cache of
        the tags of a space then starts over)."""
        self._on_aliases_changed.append(callback)

    @staticmethod
    def now() -> float:
        """The door's clock for what it writes (one place, so a replay can set it)."""
        return now_s()

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One store transaction (nested ones join it); the indexes are dropped if it rolls back.

        Other processes' writes are applied first, so that this one's rows come after theirs in the
        indexes' save order, as in the store's (a door that builds them from the store ranks ties
        and context the same)."""
        with self.lock:
            snapshots = self.indexes.snapshots
            if snapshots is not None and not snapshots.tracks_changes:
                snapshots.invalidate()  # before anything is written they would lack
            outermost = self._depth == 0
            if outermost:
                self.check_outside_writes()
            self._depth += 1
            try:
                with self.store.transaction():
                    yield
            except BaseException:
                self.indexes.drop_all()  # they may hold rows the rollback undid
                raise
            finally:
                self._depth -= 1

    def check_outside_writes(self) -> None:
        """Bring the indexes up to what other processes wrote to the store (call under the lock)."""
        changes = self.store.changes_elsewhere(self.indexes.held())
        if changes.everything:
            self.indexes.drop_all()
            self._aliases_changed()
            return
        if changes.aliases:
            self._aliases_changed()
        for team_id in changes.teams:
            self.indexes.drop_team(team_id)
        for key in changes.spaces:
            self.indexes.drop(key)
        for key in set(changes.current) | set(changes.gone):
            self.indexes.apply(key, changes.current.get(key, ()), changes.gone.get(key, ()))

    def _aliases_changed(self) -> None:
        for callback in self._on_aliases_changed:
            callback()

    # ------------------------------------------------------------------ embedding

    def embed(self, texts: Sequence[str], kind: str) -> np.ndarray | None:
        """Vectors for `texts`, or None when there is no embedder or it fails right now.

        A failing embedder (an endpoint gone down) must not fail saves and searches: they go on by
        keyword and recency, the rows saved meanwhile get their vectors from `backfill_vectors`, and
        `embedder_error` reports the failure (in /healthz and one log line a minute). Texts given to
        `prefetch` beforehand are answered from there.
        """
        if self.embedder is None or self.embedder.dim == 0 or not texts:
            return None
        ready = self._ready
        try:
            if all((text, kind) in ready for text in texts):
                import numpy as np

                vectors = np.vstack([ready[(text, kind)] for text in texts])
            else:
                vectors = self.embedder.embed(list(texts), kind=kind)  # type: ignore[arg-type]
        except Exception as exc:
            self._embed_failed(exc)
            self.needs_backfill = True
            return None
        self._embed_error = None
        return vectors

    def prefetch(self, texts: list[tuple[str, Kind]]) -> None:
        """Embed each (text, kind) now, outside the lock, so that `embed` inside a transaction answers
        from these vectors (searches wait for the lock while it is held); the ones before are let
        go. Each text is embedded alone, as a later `embed` of it would, so the vectors are the same.
        A failing embedder leaves it to `embed`, which handles the failure as always."""
        if self.embedder is None or self.embedder.dim == 0:
            return
        ready: dict[tuple[str, str], np.ndarray] = {}
        try:
            for text, kind in texts:
                ready[(text, kind)] = self.embedder.embed([text], kind=kind)[0]
        except Exception:
            ready = {}
        self._ready = ready

    def _embed_failed(self, exc: Exception) -> None:
        self._embed_error = (now_s(), exception_line(exc).rstrip(": "))
        if now_s() - self._embed_error_logged_at >= EMBED_ERROR_LOG_INTERVAL_S:
            self._embed_error_logged_at = now_s()
            sys.stderr.write(
                f"bli-memory-door: embedder {self.embedder.name if self.embedder else '?'} failed "
                f"({self._embed_error[1]}); serving keyword + recency until it answers again\n"
            )
            sys.stderr.flush()

    @property
    def embedder_error(self) -> str | None:
        """The embedder's last failure, if the last attempt failed."""
        return None if self._embed_error is None else self._embed_error[1]

    @property
    def vector_model(self) -> str | None:
        return None if self.embedder is None or self.embedder.dim == 0 else self.embedder.name

    def left_to_backfill(self) -> None:
        """A row was written without its vector: the worker's backfill embeds it (with an embedder)."""
        self.needs_backfill = self.vector_model is not None

    def backfill_vectors(self, batch: int = BACKFILL_BATCH) -> int:
        """Give current memories without a vector of this embedder one (rows saved while it was
        down, under `none`, or by another model). Returns how many were done; 0 when none are left."""
        model = self.vector_model
        if model is None:
            return 0
        tasks = self.store.vectors_missing(model, batch)
        if not tasks:
            self.needs_backfill = False
            return 0
        vectors = self.embed([task.content for task in tasks], "passage")
        if vectors is None:
            return 0
        done = 0
        with self.transaction():
            for task, vector in zip(tasks, vectors, strict=True):
                if self.store.set_vector(task.id, task.content_hash, model, vector):
                    self.indexes.vector_set((task.team_id, task.container_tag), task.id, vector)
                    done += 1
        return done

    # ------------------------------------------------------------------ rows

    def insert(
        self,
        principal: Principal,
        *,
        tag: str,
        content: str,
        vector: np.ndarray | None,
        custom_id: str | None,
        metadata: dict[str, Any] | None,
        created_at: float,
        previous: Memory | None = None,
        kind: str = "memory",
    ) -> str:
        """Insert one current row and add it to the indexes (call inside `transaction()`)."""
        updated_at = created_at if previous is None else self.now()
        memory_id = self.store.insert_version(
            NewVersion(
                team_id=principal.team_id,
                container_tag=tag,
                content=content,
                content_hash=hash_text(content),
                kind=kind if previous is None else previous.kind,
                custom_id=custom_id,
                metadata=metadata,
                person_id=principal.person_id,
                device_id=principal.device_id,
                created_at=created_at if previous is None else previous.created_at,
                updated_at=updated_at,
                vector=vector if self.vector_model is not None else None,
                vector_model=self.vector_model,
                previous=previous,
            )
        )
        if not is_pinned_metadata(metadata):  # a pin is never searched: it has no index entry
            self.indexes.added(
                (principal.team_id, tag), memory_id, content, principal.device_id, updated_at, vector
            )
        return memory_id

    def retire(self, principal: Principal, memory: Memory, status: Status) -> None:
        """Mark a current row superseded or forgotten and take it out of every search path."""
        self.retire_in(principal.team_id, memory, status)

    def retire_in(self, team_id: int, memory: Memory, status: Status) -> None:
        if not self.store.retire(memory.id, status):
            raise Conflict(f"memory {memory.id!r} is no longer current")
        self.indexes.removed((team_id, memory.container_tag), memory.id)
