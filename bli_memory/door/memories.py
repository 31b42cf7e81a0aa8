"""The memory service: what the door does with memories, over any `Store`.

Save, update, forget, search, profile and aliases; embedding (and the backfill of vectors an
embedder outage left missing); the in-memory search indexes (`door/indexes.py`) and the cache of
which tags name a space. The HTTP layer (`app.py`), the extraction worker (`jobs.py`) and the CLI call
this service and never a concrete store.

Consistency of the indexes: every write goes through this service inside `transaction()`, which
updates the indexes as it writes and drops them all if the transaction rolls back. Before a search
reads them, what other processes wrote is applied (`Store.changes_elsewhere`): the changed memories
of the spaces held are added to or taken out of their indexes in place (PostgreSQL, whose change
log says which memories changed), and the spaces a store can only say changed wholesale are dropped
(all of them for SQLite, whose other writer is rare). Dropped indexes are rebuilt from the store on
their next use. The same is done before each write, so that this door's rows follow the others' in
the indexes' save order; only two doors writing into one space at the same moment can leave a door
holding two rows in commit order rather than the store's save order (a tie or a context neighbour
may then differ from a freshly built door's).

Locking: the service's lock guards the indexes and is always taken before the store's own lock
(`transaction()` holds both), never after, so the two cannot deadlock.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from bli_memory.door import exchanges, keyword, ranking
from bli_memory.door.errors import (
    Conflict,
    DeviceRevoked,
    DoorError,
    Forbidden,
    InvalidRequest,
    NoMatch,
    NotFound,
    QueueFull,
    StoreUnavailable,
    Unauthorized,
    exception_line,
)
from bli_memory.door.indexes import (
    Indexes,
    IndexLimits,
    Lru,
    SnapshotCheck,
    Snapshots,
    SpaceKey,
    Vectors,
)
from bli_memory.door.librarian.lasting import lasting_score
from bli_memory.door.model import (
    FORGET_CLOSEST_MIN_SIMILARITY,
    PINNED_FIELD,
    Hit,
    Job,
    Memory,
    Principal,
    SaveResult,
    global_tag,
    hash_text,
    imported_id,
    is_door_tag,
    is_pinned_metadata,
    now_s,
)
from bli_memory.door.store.base import ImportedVersion, NewVersion
from bli_memory.door.store.roles import Store
from bli_memory.door.store.roles.changes import ChangeLogStore

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from bli_memory.door.embed import Embedder

EMBED_ERROR_LOG_INTERVAL_S = 60.0
SPACE_TAGS_TTL_S = 5.0
#: (team, tag) -> tags-of-the-space answers kept for SPACE_TAGS_TTL_S.
SPACE_TAGS_CACHE_MAX = 4096
SECONDS_PER_DAY = ranking.SECONDS_PER_DAY
PROFILE_DYNAMIC_COUNT = 8
PROFILE_RECENT_COUNT = 10
#: the profile reads this many times its counts, so that stored exchanges left out do not leave it short.
PROFILE_READ_FACTOR = 3
#: the newest rows the profile ranks by how long they last (``librarian.lasting``) when no query is given.
PROFILE_POOL_COUNT = 200
#: facts of one saved exchange the profile shows before it shows any other exchange's less lasting ones.
PROFILE_FACTS_PER_EXCHANGE = 2
BACKFILL_BATCH = 64
#: stored exchanges tombstoned per transaction by the retention sweep (searches run between batches).
RETENTION_BATCH = 200
#: forget by meaning looks this far down the nearest rows for one that is not a stored exchange.
CLOSEST_CANDIDATES = 8
#: how long `warm` waits for the graphs it started (a million vectors: tens of minutes on one core).
WARM_GRAPH_WAIT_S = 3600.0
#: how long closing waits for a graph being built before writing the snapshots without it.
CLOSE_GRAPH_WAIT_S = 5.0

#: where a search reads (`project`: the request's space; `global`: the caller's global space; `all`:
#: both, one ranking) and where a write lands (`project` or `global`). docs/scopes-and-pins.md.
Scope = Literal["project", "global", "all"]
SCOPES: tuple[str, ...] = ("project", "global", "all")


@dataclass(frozen=True)
class Profile:
    """What the session-start block is made of: pinned facts, the facts that bear on the query (or
    the most recent ones), and the recent memories themselves."""

    static: list[Memory]
    dynamic: list[str]
    recent: list[Memory]
    tags: list[str]


@dataclass(frozen=True)
class AliasResult:
    alias: str
    canonical: str
    tags: list[str]


@dataclass(frozen=True)
class ImportRow:
    """One row of an export to import again as it was: a version (current, superseded or forgotten)
    with its own id, its chain (root, previous version, number) and its three times."""

    id: str
    root_id: str
    previous_version_id: str | None
    version: int
    status: Literal["current", "superseded", "forgotten"]
    kind: str
    container_tag: str
    content: str
    custom_id: str | None
    metadata: dict[str, Any] | None
    created_at: float
    updated_at: float
    superseded_at: float | None


class MemoryService:
    """Memories over `store`, embedded with `embedder` (None or dimension 0: keyword and recency).

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
        self._lock = threading.RLock()
        change_log = store if isinstance(store, ChangeLogStore) else None
        snapshots = (
            None
            if index_folder is None
            else Snapshots(index_folder, None if change_log is None else change_log.index_identity)
        )
        self.indexes = Indexes(snapshots=snapshots, lock=self._lock, limits=index_limits)
        #: a store with a change log: snapshots are replayed from their stamp's position and stay
        #: valid across writes; big spaces built at start are written at once (`write_built_snapshots`)
        self._change_log = change_log
        if change_log is not None:
            self.indexes.replay = change_log.changes_since
            self.indexes.replay_vectors = lambda key, ids, model: store.vectors_of(key[0], ids, model)
        self._built_at_start: list[SpaceKey] = []
        #: spaces whose snapshot wants writing with their graph: the ones built at start, written
        #: first without it, and any whose graph a thread finished while the door serves (a dict as an
        #: ordered set; `write_built_graphs` writes them)
        self._graphs_to_write: dict[SpaceKey, None] = {}
        self.indexes.on_graph_built = self._graph_built
        self._space_tags: Lru[SpaceKey, tuple[float, tuple[str, ...]]] = Lru(SPACE_TAGS_CACHE_MAX)
        self._depth = 0  # transactions open in this service (nested ones join the outermost)
        self._embed_error: tuple[float, str] | None = None
        self._embed_error_logged_at = 0.0
        #: set when rows may lack a vector of this embedder; the door's worker then backfills them.
        self.needs_backfill = embedder is not None and embedder.dim > 0
        #: whether the store searches vectors itself (`Store.nearest`); None until first asked.
        self._store_searches_vectors: bool | None = None

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One store transaction (nested ones join it); the indexes are dropped if it rolls back.

        Other processes' writes are applied first, so that this one's rows come after theirs in the
        indexes' save order, as in the store's (a door that builds them from the store ranks ties
        and context the same)."""
        with self._lock:
            snapshots = self.indexes.snapshots
            if snapshots is not None and not snapshots.tracks_changes:
                snapshots.invalidate()  # before anything is written they would lack
            outermost = self._depth == 0
            if outermost:
                self._check_outside_writes()
            self._depth += 1
            try:
                with self.store.transaction():
                    yield
            except BaseException:
                self.indexes.drop_all()  # they may hold rows the rollback undid
                raise
            finally:
                self._depth -= 1

    def _check_outside_writes(self) -> None:
        """Bring the indexes up to what other processes wrote to the store (call under the lock)."""
        changes = self.store.changes_elsewhere(self.indexes.held())
        if changes.everything:
            self.indexes.drop_all()
            self._space_tags.clear()
            return
        if changes.aliases:
            self._space_tags.clear()
        for team_id in changes.teams:
            self.indexes.drop_team(team_id)
        for key in changes.spaces:
            self.indexes.drop(key)
        for key in set(changes.current) | set(changes.gone):
            self.indexes.apply(key, changes.current.get(key, ()), changes.gone.get(key, ()))

    def authenticate(self, token: str) -> Principal | None:
        return self.store.authenticate(token)

    def close(self) -> None:
        """Write the snapshots of big spaces (when the service has an index folder), close the store."""
        self.indexes.wait_for_conversions(CLOSE_GRAPH_WAIT_S)  # a graph still building is left out
        with self._lock:
            try:
                if self.indexes.snapshots is not None and self.indexes.big_spaces():
                    self.indexes.write_snapshots(self._vector_model or "", self._snapshot_position())
            except Exception as exc:  # the next start builds them from the store instead
                sys.stderr.write(
                    f"bli-memory-door: could not write the index snapshots ({exception_line(exc)})\n"
                )
            finally:
                self.store.close()

    def _snapshot_position(self) -> int | None:
        """The change position the indexes hold every change up to, after taking in what other
        doors wrote (call under the lock); None for a store without a change log. Raises when the
        store cannot say (the snapshots are then not written)."""
        if self._change_log is None:
            return None
        self._check_outside_writes()
        position = self._change_log.change_position()
        if position is None:
            raise StoreUnavailable("the store gave no change position")
        return position

    def write_built_snapshots(self) -> tuple[int, float]:
        """Write the snapshot of each big space `warm` built from the store (a store with a change
        log, whose snapshots outlive this door's writes): the next start reads it, even after a
        kill. The index's arrays are taken under the lock (searches wait that long), the files
        written outside it. How many were written, and the seconds the lock was held."""
        snapshots = self._lasting_snapshots()
        if snapshots is None:
            return 0, 0.0
        written = 0
        held_s = 0.0
        model = self._vector_model or ""
        with self._lock:
            self._graphs_to_write.update(dict.fromkeys(self._built_at_start))
        while self._built_at_start:
            key = self._built_at_start.pop(0)
            with self._lock:
                started = time.monotonic()
                position = self._snapshot_position()
                prepared = self.indexes.snapshot_arrays(key)
                held_s += time.monotonic() - started
            if prepared is None:
                continue
            arrays, memories = prepared
            snapshots.write_arrays(key, model, arrays, memories, None, position)
            written += 1
        return written, held_s

    def write_built_graphs(self, timeout_s: float = WARM_GRAPH_WAIT_S) -> tuple[int, float]:
        """Once the graphs `warm` started are built (at most `timeout_s`), write the snapshot of each
        space `write_built_snapshots` wrote without its graph, with it, and of each space whose graph
        was built while the door served (one that grew past `IndexLimits.ann_min_vectors`; the door's
        worker calls this with no wait when `graphs_waiting`): a door killed after that starts from
        the graph instead of building it again (about 26 minutes at a million vectors). The whole
        snapshot is written under the lock, since writes change the graph (about 6 s at a million
        memories, once; searches wait that long). How many were written, and the seconds the lock
        was held."""
        snapshots = self._lasting_snapshots()
        if snapshots is None:
            with self._lock:
                self._graphs_to_write.clear()
            return 0, 0.0
        self.indexes.wait_for_conversions(timeout_s)
        written = 0
        held_s = 0.0
        model = self._vector_model or ""
        while True:
            with self._lock:
                if not self._graphs_to_write:
                    break
                key = next(iter(self._graphs_to_write))
                del self._graphs_to_write[key]
                started = time.monotonic()
                graph = self.indexes.graph(key)
                index = self.indexes.keyword_of(key)
                if (
                    graph is not None
                    and index is not None
                    and len(index) >= self.indexes.limits.snapshot_min_memories
                ):
                    snapshots.write(key, model, index, graph, self._snapshot_position())
                    written += 1
                # else no graph (small, or dropped meanwhile): the stop writes what there is
                held_s += time.monotonic() - started
        return written, held_s

    def _graph_built(self, key: SpaceKey) -> None:
        """A thread finished a space's graph (`Indexes.on_graph_built`): with a store whose snapshots
        outlive this door's writes, its snapshot is due; the door's worker writes it
        (`graphs_waiting`, `write_built_graphs`). Without one, the stop writes it."""
        if self._lasting_snapshots() is not None:
            with self._lock:
                self._graphs_to_write[key] = None

    @property
    def graphs_waiting(self) -> bool:
        """Whether a space's snapshot waits to be written with its graph (`write_built_graphs`)."""
        return bool(self._graphs_to_write)

    def _lasting_snapshots(self) -> Snapshots | None:
        """The snapshot folder when its snapshots outlive this door's writes (a store with a change
        log, which they are replayed from), else None: such snapshots are worth writing while the
        door serves, and a graph read back from one is checked against the keyword index."""
        snapshots = self.indexes.snapshots
        return snapshots if snapshots is not None and snapshots.tracks_changes else None

    # ------------------------------------------------------------------ spaces and aliases

    def canonical_tag(self, principal: Principal, tag: str) -> str:
        return self.store.canonical_tag(principal.team_id, tag)

    def space_tags(self, principal: Principal, tag: str) -> list[str]:
        """Every tag that names the same space as `tag`, canonical first.

        Cached for SPACE_TAGS_TTL_S (every search and save asks, aliases change rarely): this door's
        own alias changes clear the cache at once, another process's show within the TTL."""
        key = (principal.team_id, tag)
        cached = self._space_tags.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return list(cached[1])
        canonical = self.store.canonical_tag(principal.team_id, tag)
        aliases = self.store.aliases_of(principal.team_id, canonical)
        tags = [canonical, *(alias for alias in aliases if alias != canonical)]
        self._space_tags.put(key, (time.monotonic() + SPACE_TAGS_TTL_S, tuple(tags)))
        return tags

    def set_alias(self, principal: Principal, alias: str, canonical: str) -> AliasResult:
        if not principal.admin:
            raise Forbidden("only an admin token may set container aliases")
        if alias == canonical:
            raise InvalidRequest("alias and canonical must differ")
        with self.transaction():
            target = self.store.canonical_tag(principal.team_id, canonical)
            if target != canonical:
                raise InvalidRequest(
                    f"{canonical!r} is itself an alias of {target!r}; name the canonical tag"
                )
            self.store.put_alias(principal.team_id, alias, canonical)
        self._space_tags.clear()
        return AliasResult(alias, canonical, self.space_tags(principal, canonical))

    # ------------------------------------------------------------------ reading

    def get(self, principal: Principal, memory_id: str) -> Memory:
        """One row of the caller's team by id; another person's global space is never visible
        (the same 404 as an id that does not exist)."""
        memory = self._visible_row(principal, memory_id)
        if memory is None:
            raise NotFound(f"no memory {memory_id!r}")
        return memory

    # ------------------------------------------------------------------ scopes

    def global_tag(self, principal: Principal) -> str:
        """The caller's global space: derived from the authenticated person, never named by a client."""
        return global_tag(principal.person_id)

    def visible(self, principal: Principal, memory: Memory) -> bool:
        """A row of a reserved tag is visible only when it is the caller's own global space."""
        return self._tag_visible(principal, memory.container_tag)

    def _tag_visible(self, principal: Principal, tag: str) -> bool:
        """Whether what a space holds (its rows, a job writing into it) is the caller's to see: a space
        of the team, or the caller's own global space."""
        return not is_door_tag(tag) or tag == self.global_tag(principal)

    def scope_of(self, principal: Principal, memory: Memory) -> Literal["project", "global"]:
        return "global" if memory.container_tag == self.global_tag(principal) else "project"

    def scope_tags(self, principal: Principal, tag: str, scope: str) -> list[str]:
        """The tags a `scope` reads: the space of `tag` (canonical first), the caller's global space,
        or both, the global space last (its rows lose save-order ties to the project's)."""
        if scope == "global":
            return [self.global_tag(principal)]
        tags = self.space_tags(principal, tag)
        return [*tags, self.global_tag(principal)] if scope == "all" else tags

    def write_tag(self, principal: Principal, tag: str, scope: str) -> str:
        """Where a write of `scope` lands: the space of `tag`, or the caller's global space."""
        return self.global_tag(principal) if scope == "global" else tag

    def history(self, principal: Principal, memory_id: str) -> list[Memory]:
        root = self.get(principal, memory_id).root_id
        return self.store.versions(principal.team_id, root)

    def count_current(self, principal: Principal, tag: str) -> int:
        return self.store.count_current(principal.team_id, self.space_tags(principal, tag))

    # ------------------------------------------------------------------ embedding

    def _embed(self, texts: Sequence[str], kind: str) -> np.ndarray | None:
        """Vectors for `texts`, or None when there is no embedder or it fails right now.

        A failing embedder (an endpoint gone down) must not fail saves and searches: they go on by
        keyword and recency, the rows saved meanwhile get their vectors from `backfill_vectors`, and
        `embedder_error` reports the failure (in /healthz and one log line a minute).
        """
        if self.embedder is None or self.embedder.dim == 0 or not texts:
            return None
        try:
            vectors = self.embedder.embed(list(texts), kind=kind)  # type: ignore[arg-type]
        except Exception as exc:
            self._embed_failed(exc)
            self.needs_backfill = True
            return None
        self._embed_error = None
        return vectors

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
    def _vector_model(self) -> str | None:
        return None if self.embedder is None or self.embedder.dim == 0 else self.embedder.name

    def backfill_vectors(self, batch: int = BACKFILL_BATCH) -> int:
        """Give current memories without a vector of this embedder one (rows saved while it was
        down, under `none`, or by another model). Returns how many were done; 0 when none are left."""
        model = self._vector_model
        if model is None:
            return 0
        tasks = self.store.vectors_missing(model, batch)
        if not tasks:
            self.needs_backfill = False
            return 0
        vectors = self._embed([task.content for task in tasks], "passage")
        if vectors is None:
            return 0
        done = 0
        with self.transaction():
            for task, vector in zip(tasks, vectors, strict=True):
                if self.store.set_vector(task.id, task.content_hash, model, vector):
                    self.indexes.vector_set((task.team_id, task.container_tag), task.id, vector)
                    done += 1
        return done

    # ------------------------------------------------------------------ writing

    def _insert(
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
        updated_at = created_at if previous is None else now_s()
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
                vector=vector if self._vector_model is not None else None,
                vector_model=self._vector_model,
                previous=previous,
            )
        )
        if not is_pinned_metadata(metadata):  # a pin is never searched: it has no index entry
            self.indexes.added(
                (principal.team_id, tag), memory_id, content, principal.device_id, updated_at, vector
            )
        return memory_id

    def _retire(
        self, principal: Principal, memory: Memory, status: Literal["superseded", "forgotten"]
    ) -> None:
        """Mark a current row superseded or forgotten and take it out of every search path."""
        self._retire_in(principal.team_id, memory, status)

    def _retire_in(self, team_id: int, memory: Memory, status: Literal["superseded", "forgotten"]) -> None:
        if not self.store.retire(memory.id, status):
            raise Conflict(f"memory {memory.id!r} is no longer current")
        self.indexes.removed((team_id, memory.container_tag), memory.id)

    def save(
        self,
        principal: Principal,
        tag: str,
        content: str,
        *,
        custom_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        created_at: float | None = None,
        kind: str = "memory",
    ) -> SaveResult:
        """Save `content` in the space of `tag` (its canonical tag).

        With `custom_id`, the current memory carrying it is replaced by a new
        version (`updated`) unless the text is the same (`unchanged`). Without
        it, an exact duplicate of a current memory in the space is `unchanged`. A save whose metadata
        says `pinned: true` is a pin (`pin`).
        """
        if is_pinned_metadata(metadata) and custom_id is None:
            return self.pin(principal, tag, content, metadata=metadata)
        tags = self.space_tags(principal, tag)
        canonical = tags[0]
        already = self._unchanged(principal, tags, content, custom_id, metadata)
        if already is not None:  # a repeated save (a re-run import, a retried hook) costs no embedding
            return already
        vectors = self._embed([content], "passage")
        vector = None if vectors is None else vectors[0]
        when = now_s() if created_at is None else created_at
        with self.transaction():  # checked again: another request may have saved it meanwhile
            if custom_id is not None:
                existing = self.store.current_by_custom_id(principal.team_id, tags, custom_id)
                if existing is not None:
                    if existing.content == content and (metadata or None) == (existing.metadata or None):
                        return SaveResult(existing.id, existing.container_tag, "unchanged")
                    self._retire(principal, existing, "superseded")
                    new = self._insert(
                        principal,
                        tag=existing.container_tag,
                        content=content,
                        vector=vector,
                        custom_id=custom_id,
                        metadata=metadata,
                        created_at=when,
                        previous=existing,
                    )
                    return SaveResult(new, existing.container_tag, "updated")
            else:
                duplicate = self.store.current_by_hash(principal.team_id, tags, hash_text(content))
                if duplicate is not None and duplicate.content == content:
                    return SaveResult(duplicate.id, duplicate.container_tag, "unchanged")
            new = self._insert(
                principal,
                tag=canonical,
                content=content,
                vector=vector,
                custom_id=custom_id,
                metadata=metadata,
                created_at=when,
                kind=kind,
            )
            return SaveResult(new, canonical, "created")

    def _unchanged(
        self,
        principal: Principal,
        tags: Sequence[str],
        content: str,
        custom_id: str | None,
        metadata: dict[str, Any] | None,
    ) -> SaveResult | None:
        """The `unchanged` answer when this save would change nothing: the memory carrying `custom_id`
        already says `content` with the same metadata, or (without a custom id) the space already holds
        `content` word for word."""
        if custom_id is not None:
            existing = self.store.current_by_custom_id(principal.team_id, tags, custom_id)
            same = existing is not None and existing.content == content
            if existing is not None and same and (metadata or None) == (existing.metadata or None):
                return SaveResult(existing.id, existing.container_tag, "unchanged")
            return None
        duplicate = self.store.current_by_hash(principal.team_id, tags, hash_text(content))
        if duplicate is not None and duplicate.content == content:
            return SaveResult(duplicate.id, duplicate.container_tag, "unchanged")
        return None

    def save_many(
        self,
        principal: Principal,
        tag: str,
        contents: Sequence[str],
        *,
        created_at: float | None = None,
        vectors: np.ndarray | None = None,
    ) -> list[str]:
        """Bulk import: embed in one batch and insert every text in one transaction (no dedupe).

        For imports and benchmarks; the API's `save` is the one-at-a-time path with its checks.
        `vectors`, when given, are this service's embedder's vectors of `contents` computed elsewhere.
        """
        canonical = self.canonical_tag(principal, tag)
        if vectors is None:
            vectors = self._embed(list(contents), "passage")
        when = now_s() if created_at is None else created_at
        with self.transaction():
            return [
                self._insert(
                    principal,
                    tag=canonical,
                    content=content,
                    vector=None if vectors is None else vectors[i],
                    custom_id=None,
                    metadata=None,
                    created_at=when,
                )
                for i, content in enumerate(contents)
            ]

    def update(
        self, principal: Principal, memory_id: str, content: str, *, metadata: dict[str, Any] | None = None
    ) -> Memory:
        """Replace what a current memory says; the old text stays as a superseded version.

        `metadata`, when given, replaces the memory's (an extraction job names the exchange the new
        text came from); otherwise the new version keeps it."""
        current = self.get(principal, memory_id)
        if current.status != "current":
            latest = self.store.current_version(principal.team_id, current.root_id)
            hint = f"; its current version is {latest.id!r}" if latest is not None else ""
            raise Conflict(f"memory {memory_id!r} is {current.status}{hint}", code="not_current")
        # the exchange the old text came from, cut, is embedded with the new text before the
        # transaction: a search right after finds the rest of it by meaning too
        planned = self._exchange_cut(principal, current, unless=content, only_verbatim=True)
        texts = [content] if planned is None or planned[1] is None else [content, planned[1]]
        vectors = self._embed(texts, "passage")
        cut_vectors = {} if vectors is None else dict(zip(texts[1:], vectors[1:], strict=True))
        with self.transaction():
            self._retire(principal, current, "superseded")
            kept = current.metadata if metadata is None else metadata
            cut = self._supersede_in_exchange(principal, current, content, cut_vectors)
            self._cut_from_other_exchanges(principal, current, unless=content)
            new = self._insert(
                principal,
                tag=current.container_tag,
                content=content,
                vector=None if vectors is None else vectors[0],
                custom_id=current.custom_id,
                metadata=kept if cut is None else exchanges.unlinked(kept, cut),
                created_at=current.created_at,
                previous=current,
            )
        return self.get(principal, new)

    # ------------------------------------------------------------------ export and import (whole history)

    def export_page(
        self, principal: Principal, tag: str | None, after: str | None, limit: int
    ) -> tuple[list[Memory], list[str] | None]:
        """(up to `limit` rows of the space of `tag` — or, when `tag` is None, of every space of the
        team and the caller's own global space — with their history and tombstones, in the order they
        were written, after the row `after`; the tags read). Any device of the team may read its
        team's rows; another person's global space is never read (its rows, pins among them, are
        that person's alone), nor named as `after`."""
        tags = None if tag is None else self.space_tags(principal, tag)
        if after is not None and self._visible_row(principal, after) is None:
            raise InvalidRequest(f"after: no memory row {after!r} in this team")
        rows = self.store.rows_page(
            principal.team_id, tags, after, limit, own_global=self.global_tag(principal)
        )
        return rows, tags

    def _visible_row(self, principal: Principal, memory_id: str) -> Memory | None:
        """The row `memory_id` of the caller's team when the caller may see it, else None."""
        memory = self.store.get(principal.team_id, memory_id)
        return memory if memory is not None and self.visible(principal, memory) else None

    def _imported_row(self, principal: Principal, memory_id: str) -> Memory | None:
        """The row an export's id `memory_id` names here for the caller: the row of that id when the
        caller may see it, else the row an earlier import stored in its place (`imported_id`)."""
        return self._visible_row(principal, memory_id) or self._visible_row(
            principal, imported_id(principal.team_id, memory_id)
        )

    def import_rows(self, principal: Principal, rows: Sequence[ImportRow]) -> list[tuple[str, str | None]]:
        """Import exported rows in their order, each checked against the rows already here: per row
        (`created`, `unchanged` or `updated`, None) or (an error code, its message). A refused row
        writes nothing and the others go on; the batch is one transaction.

        A row already here (same id, root, version and text) is `unchanged`; if it is current here and
        retired in the file it is retired now (`updated`). A later version finds its previous one
        here (imported earlier, or earlier in the batch), in the same chain and space, one version
        before it; a current previous one is superseded by it. A current row may not join a chain that
        has a current row, nor take a customId another current memory of the space carries."""
        current = [
            row.content
            for row in rows
            if row.status == "current" and self._imported_row(principal, row.id) is None
        ]  # a row already here is not embedded again: re-importing a file costs lookups only
        vectors = self._embed(current, "passage") if current else None
        vector_of = dict(zip(current, vectors, strict=True)) if vectors is not None else {}
        results: list[tuple[str, str | None]] = []
        with self.transaction():
            for row in rows:
                try:
                    with self.transaction():
                        results.append((self._import_row(principal, row, vector_of.get(row.content)), None))
                except DoorError as exc:
                    results.append((exc.code, exc.message))
        if vectors is None and current and self._vector_model is not None:
            self.needs_backfill = True
        return results

    def _import_row(self, principal: Principal, row: ImportRow, vector: np.ndarray | None) -> str:
        """Import one row (see `import_rows`). Only rows the caller may see are looked at: a row of
        another team or of another person's global space is as good as absent, and an id such a
        row holds is stored under `imported_id` instead, with the same answer as a free id."""
        team_id = principal.team_id
        tags = self.space_tags(principal, row.container_tag)
        existing = self._imported_row(principal, row.id)
        if existing is not None:
            root = self._imported_row(principal, row.root_id)
            if (existing.root_id, existing.version, existing.content) != (
                None if root is None else root.id,
                row.version,
                row.content,
            ):
                raise Conflict(f"a different row has id {row.id!r} here")
            if existing.container_tag not in tags:
                raise Conflict(f"row {row.id!r} is in another space here ({existing.container_tag!r})")
            if existing.status == row.status:
                return "unchanged"
            if existing.status == "current" and row.status != "current":
                self._retire_in(team_id, existing, row.status)
                return "updated"
            raise Conflict(f"row {row.id!r} is {existing.status} here and {row.status} in the import")
        if (row.status == "current") != (row.superseded_at is None):
            raise InvalidRequest("supersededAt is given exactly when status is not current")
        previous: Memory | None = None
        if row.version == 1:
            if row.previous_version_id is not None or row.root_id != row.id:
                raise InvalidRequest("a first version has no previousVersionId and is its own rootId")
        else:
            previous = self._import_continues(principal, row, tags)
        root_id = None if previous is None else previous.root_id
        if previous is not None and previous.status == "current":
            self._retire_in(team_id, previous, "superseded")  # a current previous one is superseded by it
        if row.status == "current":
            if root_id is not None and self.store.current_version(team_id, root_id) is not None:
                raise Conflict(f"memory {row.root_id!r} already has a current version here")
            if row.custom_id is not None and self.store.current_by_custom_id(team_id, tags, row.custom_id):
                raise Conflict(f"another current memory of the space has customId {row.custom_id!r}")
        keep_vector = row.status == "current" and self._vector_model is not None
        stored_id = None
        for candidate in (row.id, imported_id(team_id, row.id)):  # the file's id, else this team's own
            version = ImportedVersion(
                team_id=team_id,
                id=candidate,
                container_tag=tags[0],
                content=row.content,
                content_hash=hash_text(row.content),
                kind=row.kind,
                status=row.status,
                version=row.version,
                root_id=candidate if root_id is None else root_id,
                previous_version_id=None if previous is None else previous.id,
                custom_id=row.custom_id,
                metadata=row.metadata,
                person_id=principal.person_id,
                device_id=principal.device_id,
                created_at=row.created_at,
                updated_at=row.updated_at,
                superseded_at=row.superseded_at,
                vector=vector if keep_vector else None,
                vector_model=self._vector_model if keep_vector and vector is not None else None,
            )
            if self.store.insert_imported(version):
                stored_id = candidate
                break
        if stored_id is None:
            raise Conflict(f"row {row.id!r} could not be stored")
        if row.status == "current":
            self.indexes.added(
                (team_id, tags[0]), stored_id, row.content, principal.device_id, row.updated_at, vector
            )
        return "created"

    def _import_continues(self, principal: Principal, row: ImportRow, tags: Sequence[str]) -> Memory:
        """The row here that `row` continues (its previous version, as the caller sees it), checked:
        same chain, one version before, same space, not forgotten."""
        if row.previous_version_id is None:
            raise InvalidRequest(f"version {row.version} needs its previousVersionId")
        previous = self._imported_row(principal, row.previous_version_id)
        if previous is None:
            raise InvalidRequest(
                f"its previous version {row.previous_version_id!r} is not here (import rows in their order)",
                code="missing_previous",
            )
        root = self._imported_row(principal, row.root_id)
        if root is None or previous.root_id != root.id or previous.version != row.version - 1:
            raise InvalidRequest(
                f"it does not follow {row.previous_version_id!r} (root or version number differ)"
            )
        if previous.container_tag != tags[0]:
            raise InvalidRequest(f"its previous version is in another space ({previous.container_tag!r})")
        if previous.status == "forgotten":
            raise Conflict(f"its previous version {row.previous_version_id!r} is forgotten")
        return previous

    # ------------------------------------------------------------------ stored exchanges

    def exchange_vector(self, principal: Principal, tag: str, content: str) -> np.ndarray | None:
        """The vector a new stored exchange of `content` gets; None when the space keeps it already,
        or without an embedder. The job computes it before its transaction: embedding a whole
        exchange takes tens of milliseconds (hundreds on a busy machine), and searches wait for
        the transaction's lock."""
        tags = self.space_tags(principal, tag)
        if (
            self.store.current_by_custom_id(principal.team_id, tags, exchanges.exchange_key(content))
            is not None
        ):
            return None
        vectors = self._embed([content], "passage")
        return None if vectors is None else vectors[0]

    def save_exchange(
        self,
        principal: Principal,
        tag: str,
        content: str,
        *,
        metadata: dict[str, Any],
        created_at: float,
        vector: np.ndarray | None = None,
    ) -> tuple[str, bool]:
        """Keep an exchange as a document of the space (`door/exchanges.py`): (its id, created).

        The same text already kept (its exchange key is current in the space) is not kept twice.
        Without `vector` (from `exchange_vector`) the worker's backfill embeds it later."""
        tags = self.space_tags(principal, tag)
        key = exchanges.exchange_key(content)
        with self.transaction():
            existing = self.store.current_by_custom_id(principal.team_id, tags, key)
            if existing is not None:
                return existing.id, False
            memory_id = self._insert(
                principal,
                tag=tags[0],
                content=content,
                vector=vector,
                custom_id=key,
                metadata=metadata,
                created_at=created_at,
                kind="document",
            )
        if vector is None:
            self.needs_backfill = self._vector_model is not None
        return memory_id, True

    def _forget_in_exchange(self, principal: Principal, fact: Memory) -> None:
        """After `fact` is forgotten, its text must not stay searchable through the exchange it came
        from (call inside `transaction()`; see `_cut_from_exchange`), nor through any other stored
        exchange of its space that says it word for word (`_cut_from_other_exchanges`)."""
        self._cut_from_exchange(principal, fact)
        self._cut_from_other_exchanges(principal, fact)

    def _cut_from_other_exchanges(
        self, principal: Principal, memory: Memory, *, unless: str | None = None
    ) -> None:
        """Take `memory`'s sentence out of the stored exchanges of its space, other than the one it
        came from (`_cut_from_exchange` handles that one), that say it word for word: the same decision said again in a later session, a fact the user saved
        by hand and also said. Each gets a new version without the sentence (its facts unchanged), or
        is tombstoned when nothing else is left. Only a verbatim sentence is cut: an exchange that
        merely shares words with it is the record of something else. `unless`: an exchange that also
        says this text is left as it is (a correction's new value). The candidates are the keyword
        channel's for the sentence (its best `ranking.KEYWORD_CANDIDATES` rows: an exchange saying it
        holds every one of its words). Call inside `transaction()`."""
        if _is_exchange(memory) or not exchanges.has_words(memory.content):
            return
        own = exchanges.exchange_of(memory.metadata)
        tags = self.space_tags(principal, memory.container_tag)
        candidates = self._keyword_candidates(principal.team_id, tags, memory.content)
        rows = self.store.current_by_ids(principal.team_id, candidates)
        for memory_id in candidates:
            document = rows.get(memory_id)
            if document is None or not _is_exchange(document) or document.custom_id in (own, None):
                continue
            if unless is not None and exchanges.cut_fact(document.content, unless) is not None:
                continue
            remaining = exchanges.cut_fact(document.content, memory.content)
            if remaining is None:
                continue
            if exchanges.has_words(remaining):
                self._rewrite_exchange(principal, document, remaining, dict(document.metadata or {}), None)
            else:
                self._retire(principal, document, "forgotten")

    def _supersede_in_exchange(
        self, principal: Principal, old: Memory, new_content: str, vectors: Mapping[str, np.ndarray]
    ) -> str | None:
        """After `old` is superseded by `new_content`, its stale text must not stay searchable through
        the exchange it came from: cut as a forget does, unless that exchange holds the new text too
        (then it still says what is true). `vectors`: the cut text's vector, computed before the
        transaction. The key of the exchange cut or tombstoned, else None (call inside `transaction()`)."""
        return self._cut_from_exchange(
            principal, old, unless=new_content, vectors=vectors, only_verbatim=True
        )

    def _exchange_cut(
        self, principal: Principal, fact: Memory, unless: str | None, only_verbatim: bool = False
    ) -> tuple[Memory, str | None] | None:
        """The stored exchange `fact` names and its text without the fact's sentence (None: the
        sentence is not in it word for word, or nothing else is left, so it is to be tombstoned); None
        when there is nothing to cut: no such current exchange, or it holds `unless`, or
        (`only_verbatim`) the sentence is not in it word for word.

        A forget tombstones an exchange it cannot cut: the person asked for that text to be gone, and
        a fact the librarian reworded may still be said there in other words. A correction cuts only
        a sentence it finds: the exchange is the record of what was said, and dropping all of it for
        one reworded value would lose every other thing it holds (measured: a whole tracer-cli
        exchange, and the only answer to a question about it)."""
        key = exchanges.exchange_of(fact.metadata)
        if key is None or fact.kind != "memory":
            return None
        tags = self.space_tags(principal, fact.container_tag)
        document = self.store.current_by_custom_id(principal.team_id, tags, key)
        if document is None or (
            unless is not None and exchanges.cut_fact(document.content, unless) is not None
        ):
            return None
        remaining = exchanges.cut_fact(document.content, fact.content)
        if remaining is None and only_verbatim:
            return None
        return document, remaining if remaining is not None and exchanges.has_words(remaining) else None

    def _cut_from_exchange(
        self,
        principal: Principal,
        fact: Memory,
        unless: str | None = None,
        vectors: Mapping[str, np.ndarray] | None = None,
        only_verbatim: bool = False,
    ) -> str | None:
        """Take `fact`'s sentence out of the stored exchange it names (`_exchange_cut`): the exchange
        gets a new version without it and without the fact in its `facts` (the old one stays as
        history, which no search reads, like every superseded version), or is tombstoned. Its vector
        comes from `vectors` (by text) or else the worker's backfill. The exchange's key when it was
        cut or tombstoned, else None (call inside `transaction()`)."""
        planned = self._exchange_cut(principal, fact, unless, only_verbatim)
        if planned is None:
            return None
        document, remaining = planned
        if remaining is None:
            self._retire(principal, document, "forgotten")
            return document.custom_id
        metadata = dict(document.metadata or {})
        metadata[exchanges.EXCHANGE_FACTS_FIELD] = [
            root for root in exchanges.facts_of(document.metadata) if root != fact.root_id
        ]
        self._rewrite_exchange(principal, document, remaining, metadata, (vectors or {}).get(remaining))
        return document.custom_id

    def _rewrite_exchange(
        self,
        principal: Principal,
        document: Memory,
        remaining: str,
        metadata: dict[str, Any],
        vector: np.ndarray | None,
    ) -> None:
        """A new version of a stored exchange holding `remaining` (the old one stays as history). Its
        vector is `vector`, else the worker's backfill embeds it: a forget does not wait for a whole
        exchange's embedding (call inside `transaction()`)."""
        self._retire(principal, document, "superseded")
        self._insert(
            principal,
            tag=document.container_tag,
            content=remaining,
            vector=vector,
            custom_id=document.custom_id,
            metadata=metadata,
            created_at=document.created_at,
            previous=document,
        )
        if vector is None:
            self.needs_backfill = self._vector_model is not None

    def expire_exchanges(self, before: float, batch: int = RETENTION_BATCH) -> int:
        """Tombstone up to `batch` stored exchanges created before `before` (their facts stay); how
        many. The door's worker calls it until it returns less than `batch`."""
        with self.transaction():
            expired = self.store.expired_documents(exchanges.EXCHANGE_KEY_PREFIX, before, batch)
            for team_id, memory in expired:
                self._retire_in(team_id, memory, "forgotten")
        return len(expired)

    def forget(
        self,
        principal: Principal,
        tag: str,
        *,
        memory_id: str | None = None,
        content: str | None = None,
        query: str | None = None,
        scope: Scope = "project",
    ) -> tuple[Memory, str, float | None]:
        """Tombstone one memory. Returns (the memory, match kind, similarity for a closest match).

        By id, the memory may be in the space of `tag` or in the caller's global space whatever
        `scope` says; by text or meaning, `scope` names the space looked in. A pin is forgotten only
        by id (its text and meaning are not searched)."""
        tags = self.scope_tags(principal, tag, scope)
        if memory_id is not None:
            target = self.get(principal, memory_id)
            if target.container_tag not in self.scope_tags(principal, tag, "all"):
                raise NotFound(f"no memory {memory_id!r} in this space")
            if target.status != "current":
                raise Conflict(f"memory {memory_id!r} is already {target.status}", code="not_current")
            with self.transaction():
                self._retire(principal, target, "forgotten")
                self._forget_in_exchange(principal, target)
            return target, "id", None
        if content is not None:
            with self.transaction():
                found = self.store.current_by_hash(principal.team_id, tags, hash_text(content))
                if found is None or found.content != content:
                    raise NoMatch("no current memory in this space has exactly that text")
                self._retire(principal, found, "forgotten")
                self._forget_in_exchange(principal, found)
            return found, "exact", None
        assert query is not None
        closest = self._closest(principal, tags, query)
        if closest is None:
            raise NoMatch("no memory in this space can be compared by meaning (no embedder, or no memories)")
        memory, similarity = closest
        if similarity < FORGET_CLOSEST_MIN_SIMILARITY:
            raise NoMatch(
                f"no memory is close enough to forget (closest similarity {similarity:.2f}, "
                f"needs {FORGET_CLOSEST_MIN_SIMILARITY})"
            )
        with self.transaction():
            self._retire(principal, memory, "forgotten")
            self._forget_in_exchange(principal, memory)
        return memory, "closest", similarity

    def _closest(self, principal: Principal, tags: Sequence[str], query: str) -> tuple[Memory, float] | None:
        """The current memory of the space most similar in meaning to `query`, with its cosine.

        Never a stored exchange: forgetting by meaning means a fact (forgetting a fact also takes its
        sentence out of its exchange); an exchange is forgotten by id or exact text."""
        vectors = self._embed([query], "query")
        if vectors is None:
            return None
        with self._lock:
            self._check_outside_writes()
            similarities_of, ranked = self._vector_candidates(principal.team_id, tags, vectors[0])
            top = ranked[:CLOSEST_CANDIDATES]
            similarities = similarities_of(top)
            rows = self.store.current_by_ids(principal.team_id, top)
        for memory_id in top:
            memory = rows.get(memory_id)
            if memory is not None and not _is_exchange(memory):
                return memory, similarities.get(memory_id) or 0.0
        return None

    # ------------------------------------------------------------------ search

    def search(
        self,
        principal: Principal,
        tag: str,
        q: str,
        *,
        limit: int = 5,
        threshold: float = 0.0,
        context: bool = True,
        weights: ranking.Weights = ranking.DEFAULT_WEIGHTS,
        scope: Scope = "project",
    ) -> list[Hit]:
        """Hybrid search of a space (every tag that names it): keyword, meaning and recency, fused,
        and then the best rows' context (`ranking.spread_context`) unless `context` is False.
        `weights` are the fusion's (an evaluation's channel-only runs pass their own).

        `similarity` is the cosine of query and memory where the memory has a
        vector; `threshold` filters on it (rows without one are not filtered:
        with no embedder the door ranks by keyword and recency alone).

        Deterministic: the same memories saved in the same order and the same query give the same
        hits with the same scores in every door and every run. Nothing reads the clock (age counts
        back from the newest candidate, `ranking.ages_days`), cosines do not depend on a row's place
        in the matrix (`_vector_candidates`), and every tie is broken by save order
        (`ranking.ordered`), never by id.

        `scope` `all` reads the space and the caller's global space as one: one ranking over both,
        the global space's rows after the project's in save order (`scope_tags`). Pins are never
        among the hits (they are not indexed).
        """
        tags = self.scope_tags(principal, tag, scope)
        query_vectors = self._embed([q], "query")
        query_vector = None if query_vectors is None else query_vectors[0]
        with self._lock:
            self._check_outside_writes()
            keyword_ids = self._keyword_candidates(principal.team_id, tags, q)
            vector_ids: list[str] = []
            similarities_of: Similarities = _no_similarities
            if query_vector is not None:
                similarities_of, vector_ids = self._vector_candidates(principal.team_id, tags, query_vector)
            candidate_ids = set(keyword_ids).union(vector_ids)
            if not candidate_ids:
                return []
            position = self._save_positions(principal.team_id, tags, candidate_ids)
            updated = self.store.updated_at(principal.team_id, list(candidate_ids))
            cosines = similarities_of(list(candidate_ids))
        keyword_rank = {memory_id: rank for rank, memory_id in enumerate(keyword_ids)}
        # in save order, so that equal similarities take their vector ranks the same way in every door
        live = sorted(
            (memory_id for memory_id in candidate_ids if memory_id in updated), key=position.__getitem__
        )
        similarities = {memory_id: cosines.get(memory_id) for memory_id in live}
        ages = ranking.ages_days([updated[memory_id] for memory_id in live])
        signals = [
            ranking.Signals(
                keyword_rank=keyword_rank.get(memory_id),
                similarity=similarities[memory_id],
                age_days=age,
            )
            for memory_id, age in zip(live, ages, strict=True)
        ]
        fused = dict(zip(live, ranking.fuse(signals, weights), strict=True))
        if context and weights.context > 0:
            fused = self._with_context(principal.team_id, tags, fused, updated, position, weights)
        if threshold > 0:  # cosines can be negative: the default 0 must keep every row
            fused = {
                memory_id: score
                for memory_id, score in fused.items()
                if (sim := similarities[memory_id]) is None or sim >= threshold
            }
        window = ranking.ordered(fused, updated, position)[: limit + ranking.EXCHANGE_WINDOW]
        rows = self.store.current_by_ids(principal.team_id, window)
        if weights.answer_kind > 0:
            lifted = ranking.lift_answer_kinds(
                {memory_id: fused[memory_id] for memory_id in window},
                {memory_id: row.content for memory_id, row in rows.items() if not _is_exchange(row)},
                q,
                weights.answer_kind,
            )
            fused = {**fused, **lifted}
            window = ranking.ordered(lifted, updated, position)
        order, fused = ranking.represented_exchanges_yield(
            window,
            fused,
            {memory_id: key for memory_id, row in rows.items() if (key := _fact_exchange(row)) is not None},
            {memory_id: row.custom_id or "" for memory_id, row in rows.items() if _is_exchange(row)},
        )
        top = order[:limit]
        vector_set = set(vector_ids)
        hits = [
            Hit(
                memory=rows[memory_id],
                similarity=similarities[memory_id],
                score=fused[memory_id],
                matched_by=tuple(
                    channel
                    for channel, found in (
                        ("keyword", memory_id in keyword_rank),
                        ("vector", memory_id in vector_set),
                    )
                    if found
                ),
            )
            for memory_id in top
            if memory_id in rows
        ]
        return _facts_before_their_exchanges(hits)

    def _save_positions(
        self, team_id: int, tags: Sequence[str], memory_ids: Iterable[str]
    ) -> dict[str, ranking.SavePosition]:
        """Where each of `memory_ids` stands in save order (`ranking.SavePosition`), from the keyword
        indexes, whose slots are save order (call under the lock). The tie-break of every ranking:
        unlike an id, it is the same in every door that holds the same memories saved in the same order."""
        found: dict[str, ranking.SavePosition] = {}
        left = list(memory_ids)
        for number, tag in enumerate(tags):
            slot_of = self._keyword_index(team_id, tag).slot_of
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

    def _with_context(
        self,
        team_id: int,
        tags: Sequence[str],
        fused: dict[str, float],
        updated: Mapping[str, float],
        position: Mapping[str, ranking.SavePosition],
        weights: ranking.Weights,
    ) -> dict[str, float]:
        """`fused` after the best rows lend score to their context (`ranking.spread_context`).
        Neighbours come from the keyword indexes (save order, device, time)."""
        seeds = ranking.ordered(fused, updated, position)
        neighbours: dict[str, list[tuple[str, int]]] = {}
        with self._lock:
            indexes = [self._keyword_index(team_id, tag) for tag in tags]
            for seed in seeds[: ranking.CONTEXT_SEEDS]:
                for index in indexes:
                    if seed in index.slot_of:
                        neighbours[seed] = index.neighbours(
                            seed, ranking.CONTEXT_STEPS, ranking.CONTEXT_WINDOW_S
                        )
                        break
        return ranking.spread_context(fused, neighbours, weights)

    def _keyword_candidates(self, team_id: int, tags: Sequence[str], q: str) -> list[str]:
        """Ids of the best BM25 matches in the space, best first (call under the lock)."""
        terms = keyword.query_terms(q)
        if not terms:
            return []
        indexes = [self._keyword_index(team_id, tag) for tag in tags]
        return keyword.search_with_feedback(indexes, terms, ranking.KEYWORD_CANDIDATES)

    def _keyword_index(self, team_id: int, tag: str) -> keyword.KeywordIndex:
        """The keyword index of one tag's current memories, built on first use (call under the lock)."""
        return self.indexes.keyword(
            (team_id, tag),
            lambda: self.store.index_rows(team_id, tag),
            model=self._vector_model or "",
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

    def _space_vectors(self, team_id: int, tag: str) -> Vectors | None:
        """One tag's current vectors (a matrix, or a graph for a big space), loaded on first use
        (call under the lock)."""
        model = self._vector_model
        if model is None or self.embedder is None:
            return None
        if self._lasting_snapshots() is not None:
            # a graph read back from a snapshot is checked against the keyword index replayed from
            # the same position: without it loaded first (a forget by meaning as a space's first
            # request), the graph would be thrown away and built again
            self._keyword_index(team_id, tag)
        return self.indexes.vectors(
            (team_id, tag),
            lambda: self.store.current_vectors(team_id, tag, model),
            self.embedder.dim,
            model=model,
            current=self._snapshot_check(team_id, tag),
        )

    def warm(self, *, wait_for_graphs: bool = True) -> int:
        """Build the keyword index and vectors of every space, busiest first; the count built.

        The door runs this in the background at start, so that the first search of a space does not
        pay for its index (0.5-0.6 s per 10 000 memories, docs/benchmarks.md), or reads them from
        their snapshots. Only as many spaces as the indexes hold: more would push out the busiest,
        built first. Returns when the graphs of big spaces without a snapshot are built too (at most
        WARM_GRAPH_WAIT_S; searched exactly meanwhile), unless `wait_for_graphs` is False (the door
        writes the keyword snapshots first, then waits, `write_built_graphs`).
        """
        spaces = self.store.spaces(self.indexes.max_spaces)
        for team_id, tag in spaces:
            with self._lock:
                self._check_outside_writes()
                builds = self.indexes.keyword_builds
                self._keyword_index(team_id, tag)
                if self.indexes.keyword_builds != builds:
                    self._built_at_start.append((team_id, tag))
                if not self._nearest_in_store():
                    self._space_vectors(team_id, tag)
        if wait_for_graphs:
            self.indexes.wait_for_conversions(WARM_GRAPH_WAIT_S)
        return len(spaces)

    def _nearest_in_store(self) -> bool:
        """Whether the store answers `nearest` itself (then no vector matrix is loaded in memory)."""
        model = self._vector_model
        if model is None or self.embedder is None:
            return False
        if self._store_searches_vectors is None:
            import numpy as np

            probe = np.zeros(self.embedder.dim, dtype=np.float32)
            self._store_searches_vectors = self.store.nearest(0, "", model, probe, 0) is not None
        return self._store_searches_vectors

    def _store_nearest(
        self, team_id: int, tags: Sequence[str], query_vector: np.ndarray
    ) -> tuple[Similarities, list[str]]:
        """`_vector_candidates` from the store's own vector index: each tag's nearest, merged, equal
        cosines in save order; any other row asked about (the keyword channel's) gets its cosine from
        the store too, as every row has one in the in-memory matrix."""
        model = self._vector_model
        assert model is not None
        cosine: dict[str, float] = {}
        for tag in tags:
            cosine.update(
                self.store.nearest(team_id, tag, model, query_vector, ranking.VECTOR_CANDIDATES) or []
            )
        position = self._save_positions(team_id, tags, cosine)
        top = sorted(cosine, key=lambda memory_id: (-cosine[memory_id], position[memory_id]))

        def similarities(ids: Sequence[str]) -> dict[str, float | None]:
            found: dict[str, float | None] = {memory_id: cosine.get(memory_id) for memory_id in ids}
            missing = [memory_id for memory_id, value in found.items() if value is None]
            if missing:
                found.update(self.store.similarities(team_id, model, query_vector, missing) or {})
            return found

        return similarities, top[: ranking.VECTOR_CANDIDATES]

    def _vector_candidates(
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

        if self._nearest_in_store():
            return self._store_nearest(team_id, tags, query_vector)
        spaces = [
            space for tag in tags if (space := self._space_vectors(team_id, tag)) is not None and len(space)
        ]
        if not spaces:
            return _no_similarities, []
        query = query_vector.astype(np.float32)
        model = self._vector_model or ""

        def fetch(ids: Sequence[str]) -> dict[str, np.ndarray]:
            return self.store.vectors_of(team_id, ids, model)

        scorers = [space.scores(query, fetch) for space in spaces]
        count = min(ranking.VECTOR_CANDIDATES, sum(len(space) for space in spaces))
        near = [pair for scorer in scorers for pair in scorer.nearest(count)]
        if len(near) > count:  # every row at least as close as the count-th, ties at the cut included
            cut = sorted((cosine for _, cosine in near), reverse=True)[count - 1]
            near = [(memory_id, cosine) for memory_id, cosine in near if cosine >= cut]
        position = self._save_positions(team_id, tags, [memory_id for memory_id, _ in near])
        top = sorted(near, key=lambda pair: (-pair[1], position[pair[0]]))[:count]

        def similarities(ids: Sequence[str]) -> dict[str, float | None]:
            found: dict[str, float | None] = dict.fromkeys(ids)
            for scorer in scorers:
                for memory_id, cosine in scorer.similarities([i for i in ids if found[i] is None]).items():
                    found[memory_id] = cosine
            return found

        return similarities, [memory_id for memory_id, _ in top]

    # ------------------------------------------------------------------ profile

    def profile(self, principal: Principal, tag: str, q: str | None = None) -> Profile:
        """Pinned facts, the facts bearing on `q` (or, without one, the facts that last longest), and
        the latest memories. What lasts is ranked by ``librarian.lasting.lasting_score`` over the newest
        PROFILE_POOL_COUNT rows (decisions, conventions and preferences, then standing orders, then how
        things are; newest first among equals); a question, a test count, a log line or a fragment
        without a verb is left out of all three, and so are stored exchanges (they are history, and
        each would fill the block with a whole turn)."""
        tags = self.scope_tags(principal, tag, "all")
        pinned = self.store.pinned(principal.team_id, tags)
        read = self.store.recent(principal.team_id, tags, max(PROFILE_POOL_COUNT, PROFILE_RECENT_COUNT))
        scored = [(memory, lasting_score(memory.content)) for memory in read if not _is_exchange(memory)]
        kept = [(memory, score) for memory, score in scored if score is not None]
        recent = [memory for memory, _score in kept[:PROFILE_RECENT_COUNT]]
        if q:
            hits = self.search(
                principal, tag, q, limit=PROFILE_DYNAMIC_COUNT * PROFILE_READ_FACTOR, scope="all"
            )
            found = [
                hit.memory
                for hit in hits
                if not _is_exchange(hit.memory) and lasting_score(hit.memory.content) is not None
            ]
            dynamic = [memory.content for memory in found[:PROFILE_DYNAMIC_COUNT]]
        else:
            dynamic = [memory.content for memory in _most_lasting(kept)[:PROFILE_DYNAMIC_COUNT]]
        return Profile(static=pinned, dynamic=dynamic, recent=recent, tags=tags[:-1])

    # ------------------------------------------------------------------ pins

    def pin(
        self,
        principal: Principal,
        tag: str,
        content: str,
        *,
        scope: Scope = "project",
        metadata: dict[str, Any] | None = None,
    ) -> SaveResult:
        """Keep `content` verbatim as a pin of the space of `tag` or of the caller's global space.

        A pin is loaded at every session start and nothing else reads it: it is not indexed (never a
        search hit, never a librarian's neighbour, so never merged, superseded or decayed) and has no
        vector. The same text pinned again in that space is `unchanged`."""
        tags = self.scope_tags(principal, tag, "global" if scope == "global" else "project")
        with self.transaction():
            for existing in self.store.pinned(principal.team_id, tags):
                if existing.content == content:
                    return SaveResult(existing.id, existing.container_tag, "unchanged")
            new = self._insert(
                principal,
                tag=tags[0],
                content=content,
                vector=None,
                custom_id=None,
                metadata={**(metadata or {}), PINNED_FIELD: True},
                created_at=now_s(),
            )
        return SaveResult(new, tags[0], "created")

    def pins(self, principal: Principal, tag: str) -> list[Memory]:
        """Every current pin that applies in the space of `tag`: the space's, then the caller's global
        ones, each oldest first."""
        tags = self.space_tags(principal, tag)
        return [
            *self.store.pinned(principal.team_id, tags),
            *self.store.pinned(principal.team_id, [self.global_tag(principal)]),
        ]

    def unpin(self, principal: Principal, memory_id: str) -> Memory:
        """Make a current pin an ordinary memory again: a new version without the flag (the pin stays
        as its history), searched and reconciled like any other from now on. Forget it afterwards
        when it is no longer true. 404 for an unknown or invisible id, 409 for one that is not a
        current pin."""
        current = self.get(principal, memory_id)
        if current.status != "current":
            raise Conflict(f"memory {memory_id!r} is {current.status}", code="not_current")
        if not current.pinned:
            raise Conflict(f"memory {memory_id!r} is not a pin", code="not_pinned")
        metadata = {key: value for key, value in (current.metadata or {}).items() if key != PINNED_FIELD}
        vectors = self._embed([current.content], "passage")
        with self.transaction():
            self._retire(principal, current, "superseded")
            new = self._insert(
                principal,
                tag=current.container_tag,
                content=current.content,
                vector=None if vectors is None else vectors[0],
                custom_id=current.custom_id,
                metadata=metadata or None,
                created_at=current.created_at,
                previous=current,
            )
        if vectors is None:
            self.needs_backfill = self._vector_model is not None
        return self.get(principal, new)

    # ------------------------------------------------------------------ extraction jobs

    def enqueue_job(
        self, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None
    ) -> tuple[str, str]:
        """Write one durable job row; returns (job id, canonical tag)."""
        canonical = self.canonical_tag(principal, tag)
        try:
            return self.store.enqueue_job(principal, canonical, content, metadata), canonical
        except DeviceRevoked:
            raise Unauthorized("the token is unknown or revoked") from None
        except QueueFull as full:
            raise DoorError(
                f"this device has {full.pending} extract jobs waiting, the most it may have; "
                "save again when some are done",
                code="queue_full",
                status=429,
            ) from None

    def get_job(self, principal: Principal, job_id: str) -> Job:
        """A job of the caller's team; one that writes into another person's global space is theirs
        alone (the same 404 as an id that does not exist)."""
        job = self.store.get_job(principal.team_id, job_id)
        if job is None or not self._tag_visible(principal, job.container_tag):
            raise NotFound(f"no job {job_id!r}")
        return job

    # ------------------------------------------------------------------ experience log

    def record_experience(
        self,
        principal: Principal,
        *,
        entry_id: str,
        store: str,
        verdict: str,
        reason: str,
        created_at: float | None,
    ) -> Literal["inserted", "identical"]:
        """Insert one opinion, or recognise an identical retry; a different entry under the same id
        is a Conflict."""
        outcome = self.store.record_experience(
            principal, entry_id=entry_id, store=store, verdict=verdict, reason=reason, created_at=created_at
        )
        if outcome == "conflict":
            raise Conflict(f"experience entry {entry_id} exists with different content", code="conflict")
        return outcome

    def experience_rows(
        self, principal: Principal, since: float, *, page_rows: int = 1000, cap_rows: int = 50_000
    ) -> tuple[list[dict[str, Any]], int]:
        """The team's opinions since `since`, read in (created_at, id) pages up to `cap_rows`.

        Returns (rows, how many the window holds) so the caller can say when the read was capped.
        Pages are separate reads, not one snapshot: a long read never holds the database."""
        total = self.store.experience_count(principal.team_id, since)
        rows: list[dict[str, Any]] = []
        after: tuple[float, str] = (since, "")
        while len(rows) < cap_rows:
            page = self.store.experience_page(
                principal.team_id, since, after, min(page_rows, cap_rows - len(rows))
            )
            if not page:
                break
            rows.extend(page)
            after = (page[-1]["created_at"], page[-1]["id"])
        return rows, total


#: the cosines of memories by id (None: the memory has no vector), for a list of ids.
Similarities = Callable[[Sequence[str]], dict[str, float | None]]


def write_snapshots_saying(what: str, write: Callable[[], tuple[int, float]], log: Any) -> None:
    """Run `write` (`MemoryService.write_built_snapshots` or `write_built_graphs`: how many snapshots,
    and the seconds searches waited) and say on `log` what it wrote, in the one line the door's start
    and its worker both print. What `write` raises is the caller's (the start prints one line and
    serves on; the worker's loop pauses and retries, or stops on a damaged file)."""
    started = time.monotonic()
    written, held_s = write()
    if written:
        log.write(
            f"bli-memory-door wrote {written} {what} in {time.monotonic() - started:.1f} s"
            f" (searches waited {held_s:.1f} s of it)\n"
        )
        log.flush()


def _no_similarities(ids: Sequence[str]) -> dict[str, float | None]:
    return dict.fromkeys(ids)


def _most_lasting(scored: list[tuple[Memory, int]]) -> list[Memory]:
    """Newest-first (memory, lasting score) pairs ordered by score, newest first among equals; at most
    PROFILE_FACTS_PER_EXCHANGE facts of one saved exchange come before the others' facts, so one long
    exchange does not fill the profile."""
    order = sorted(range(len(scored)), key=lambda index: (-scored[index][1], index))
    taken: dict[str, int] = {}
    first: list[Memory] = []
    later: list[Memory] = []
    for index in order:
        memory = scored[index][0]
        source = str((memory.metadata or {}).get(exchanges.FACT_EXCHANGE_FIELD) or memory.id)
        taken[source] = taken.get(source, 0) + 1
        (first if taken[source] <= PROFILE_FACTS_PER_EXCHANGE else later).append(memory)
    return first + later


def _is_exchange(memory: Memory) -> bool:
    return exchanges.is_exchange(memory.kind, memory.custom_id, memory.metadata)


def _fact_exchange(memory: Memory) -> str | None:
    """The key of the stored exchange a distilled fact came from (None for any other memory)."""
    return exchanges.exchange_of(memory.metadata) if memory.kind == "memory" else None


def _facts_before_their_exchanges(hits: list[Hit]) -> list[Hit]:
    """`hits` with each stored exchange moved to just after the last of its facts that they hold,
    its score lowered to that fact's: a fact says what its exchange says, in fewer words, so an
    agent reads the fact first. An exchange none of whose facts is in `hits` keeps its place."""
    last_fact: dict[str, int] = {}
    for index, hit in enumerate(hits):
        key = _fact_exchange(hit.memory)
        if key is not None:
            last_fact[key] = index
    if not last_fact:
        return hits
    waiting: dict[int, list[Hit]] = {}
    ordered: list[Hit] = []
    for index, hit in enumerate(hits):
        after = last_fact.get(hit.memory.custom_id or "", -1) if _is_exchange(hit.memory) else -1
        if after > index:
            waiting.setdefault(after, []).append(hit)
            continue
        ordered.append(hit)
        for moved in waiting.pop(index, []):
            ordered.append(replace(moved, score=min(moved.score, hit.score)))
    return ordered
