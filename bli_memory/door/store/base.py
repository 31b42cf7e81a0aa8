"""The `Store` interface: what the door needs from a database, in rows.

A store keeps devices, aliases, memory rows (every version and tombstone), vectors, extraction jobs,
experience rows and the devices' hourly hook figures, and nothing else: no search policy, no caches of derived data, no HTTP. The
memory service (`door/memories.py`) builds search, reconciliation and indexes on top of it, so a new
database plugs in by implementing this protocol and passing the contract suite
(`tests/door/store/test_contract.py`).

Conventions every implementation follows:
- Every method is safe to call from several threads.
- Reads of memories are scoped by `team_id`; a row of another team is never returned.
- Methods return `None` or `False` for "not there"; deciding what that means for a caller (404,
  409) is the service's job.
- `transaction()` nests: an inner block joins the outer one, and an exception leaving any block
  rolls back that block's writes (a savepoint when nested).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from bli_memory.door.model import Job, Memory, Principal

if TYPE_CHECKING:
    import numpy as np

ExperienceOutcome = Literal["inserted", "identical", "conflict"]
#: extract jobs one device may have waiting (queued or running); past it a save with extract is 429.
#: A turn queues one job and a worker drains them in milliseconds (seconds with an LLM): hundreds
#: waiting means a stuck worker or a runaway client, and each may hold 100 000 characters.
MAX_PENDING_JOBS_PER_DEVICE = 200

#: the tables dump_rows/load_rows copy, in the order a copy follows (a row's references first)
COPY_TABLES = (
    "teams",
    "people",
    "devices",
    "container_aliases",
    "memories",
    "memory_extract_jobs",
    "experience",
    "hook_stats",
)
#: each copied table's primary key: `after` in dump_rows is a tuple of these columns' values.
PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "teams": ("id",),
    "people": ("id",),
    "devices": ("id",),
    "container_aliases": ("team_id", "alias"),
    "memories": ("rowid",),
    "memory_extract_jobs": ("id",),
    "experience": ("team_id", "id"),
    "hook_stats": ("team_id", "device_id", "hour"),
}
#: the columns of a dumped row, by their SQLite names: what a store's dump_rows gives and its
#: load_rows takes, whatever the store names them itself. `people.admin` is no longer read (admin
#: is a device's) but is kept, so that a copy holds everything the original did.
COPY_COLUMNS: dict[str, tuple[str, ...]] = {
    "teams": ("id", "name", "created_at"),
    "people": ("id", "team_id", "name", "admin", "created_at"),
    "devices": (
        "id",
        "person_id",
        "token_hash",
        "label",
        "admin",
        "created_at",
        "last_used_at",
        "revoked_at",
    ),
    "container_aliases": ("team_id", "alias", "canonical", "created_at"),
    "memories": tuple(
        "rowid id team_id container_tag custom_id content content_hash kind status version root_id "
        "previous_version_id pinned metadata person_id device_id created_at updated_at superseded_at "
        "embedding embedding_model".split()
    ),
    "memory_extract_jobs": tuple(
        "id team_id person_id device_id container_tag content metadata status attempts outcome error "
        "created_at started_at finished_at".split()
    ),
    "experience": (
        "id",
        "team_id",
        "person_id",
        "device_id",
        "store",
        "verdict",
        "reason",
        "created_at",
        "received_at",
    ),
    "hook_stats": ("team_id", "device_id", "person_id", "hour", "counts", "received_at"),
}
#: dumped columns holding JSON text: a store may give them as text or as the parsed value, and
#: load_rows takes either.
JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "memories": ("metadata",),
    "memory_extract_jobs": ("metadata", "outcome"),
}


def key_of(table: str, row: dict[str, Any]) -> tuple[Any, ...]:
    """A dumped row's primary key, as dump_rows' `after` takes it."""
    return tuple(row[column] for column in PRIMARY_KEYS[table])


class QueueFull(Exception):
    """The device already has as many extraction jobs waiting as the store allows."""

    def __init__(self, pending: int) -> None:
        super().__init__(f"{pending} extraction jobs waiting")
        self.pending = pending


class StoreFull(Exception):
    """No room to write: the store's disk, or its size limit, is full. The failed write left nothing
    behind (its transaction was rolled back); reads go on working."""


class StoreDamaged(Exception):
    """The store's data was found damaged while the door served it: every write is refused from
    then on (nothing was written by this one); reads go on working."""


class StoreUnavailable(Exception):
    """The store cannot answer right now: its server restarted or went away, a connection dropped,
    or a deadline passed. The failed call's transaction wrote nothing; a later call may work (the
    door answers 503 store_unavailable meanwhile)."""


class DeviceRevoked(Exception):
    """The device was revoked after its request was authenticated."""


@dataclass(frozen=True)
class NewVersion:
    """One memory row to insert: a first version (`previous` is None) or the next version of one."""

    team_id: int
    container_tag: str
    content: str
    content_hash: str
    kind: str
    custom_id: str | None
    metadata: dict[str, Any] | None
    person_id: int | None
    device_id: str | None
    created_at: float
    updated_at: float
    vector: np.ndarray | None = None
    vector_model: str | None = None
    previous: Memory | None = None


@dataclass(frozen=True)
class ImportedVersion:
    """One memory row to insert exactly as another door exported it: its own id, version, root,
    previous version, status and times (the history of an export, imported again)."""

    team_id: int
    id: str
    container_tag: str
    content: str
    content_hash: str
    kind: str
    status: Literal["current", "superseded", "forgotten"]
    version: int
    root_id: str
    previous_version_id: str | None
    custom_id: str | None
    metadata: dict[str, Any] | None
    person_id: int | None
    device_id: str | None
    created_at: float
    updated_at: float
    superseded_at: float | None
    vector: np.ndarray | None = None
    vector_model: str | None = None


@dataclass(frozen=True)
class IndexRow:
    """What a search index needs of a current memory: its id, text, device and last change."""

    id: str
    content: str
    device_id: str | None
    updated_at: float


#: a space: (team id, container tag).
SpaceKey = tuple[int, str]


@dataclass(frozen=True)
class OutsideChanges:
    """What other processes committed since a store's last `changes_elsewhere` (its own commits left
    out), as far as in-memory indexes care.

    A store that cannot say what changed answers `everything`: every index may be stale. Otherwise
    `spaces` and `teams` name what may have changed wholesale (a purge, a bulk load, more changes than
    one answer carries), and `current`/`gone` give, for the spaces the caller holds, each changed
    memory as it is now: still searchable (its index row, in save order) or not any more (superseded,
    forgotten, pinned, deleted). Applying them is idempotent: a memory the caller already holds in
    that state is left as it is."""

    everything: bool = False
    spaces: frozenset[SpaceKey] = frozenset()
    teams: frozenset[int] = frozenset()
    current: Mapping[SpaceKey, Sequence[IndexRow]] = field(default_factory=dict)
    gone: Mapping[SpaceKey, Sequence[str]] = field(default_factory=dict)
    #: container aliases changed (which tags name a space)
    aliases: bool = False
    #: other processes committed anything at all since the last call
    seen: bool = False


#: with `rows_page` reading every tag: a team's shared spaces and the caller's own global space, never
#: another person's (the door's own tags begin "bli:", written exactly; `model.is_door_tag`)
SHARED_OR_OWN_GLOBAL_SQL = "(substr(container_tag, 1, 4) <> 'bli:' OR container_tag = {p})"
#: a device token's principal; `{p}` is the store's placeholder (`?` for SQLite, `%s` for PostgreSQL)
AUTHENTICATE_SQL = """SELECT d.id AS device_id, p.id AS person_id, p.name AS person, d.admin AS admin,
          t.id AS team_id, t.name AS team
   FROM devices d JOIN people p ON p.id = d.person_id JOIN teams t ON t.id = p.team_id
   WHERE d.token_hash = {p} AND d.revoked_at IS NULL"""
#: every device, oldest first, with its person and team (`bli-memory-door devices`)
LIST_DEVICES_SQL = """SELECT d.id, d.label, d.created_at, d.revoked_at, p.name AS person, d.admin, t.name AS team
   FROM devices d JOIN people p ON p.id = d.person_id JOIN teams t ON t.id = p.team_id
   ORDER BY d.created_at"""


#: who ran an extraction job, for the librarian's writes: (device id, person id)
PRINCIPAL_FOR_JOB_SQL = """SELECT p.name AS person, coalesce(d.admin, 0) AS admin, t.name AS team FROM people p
   JOIN teams t ON t.id = p.team_id LEFT JOIN devices d ON d.id = {p} WHERE p.id = {p}"""
#: the order jobs are claimed in, given the device of the claimer's previous job as the one
#: parameter: the devices after it (in id order) first, then the rest from the start, each device's
#: oldest job first. A round-robin over the devices with waiting jobs, kept without a table of its
#: own: the claimer (each door's worker) remembers where its round is.
FAIR_JOB_ORDER_SQL = "device_id <= {p}, device_id, created_at, id"
#: a queued extraction job (`job_values`)
ENQUEUE_JOB_SQL = """INSERT INTO memory_extract_jobs (id, team_id, person_id, device_id, container_tag, content,
       metadata, created_at) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})"""
#: one device's figures of one hour, replaced when the device sends that hour again
PUT_HOOK_STATS_SQL = """INSERT INTO hook_stats (team_id, device_id, person_id, hour, counts, received_at)
   VALUES ({p}, {p}, {p}, {p}, {p}, {p})
   ON CONFLICT (team_id, device_id, hour) DO UPDATE
   SET counts = excluded.counts, person_id = excluded.person_id,
       received_at = excluded.received_at"""


#: one opinion of the experience log (`experience_values`); PostgreSQL adds its ON CONFLICT clause
INSERT_EXPERIENCE_SQL = """INSERT INTO experience (id, team_id, person_id, device_id, store, verdict, reason,
       created_at, received_at) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})"""
#: a page of a team's opinions since a time, after a (created_at, id) keyset position
EXPERIENCE_PAGE_SQL = """SELECT e.id, e.store, e.verdict, e.reason, e.created_at, p.name AS person
   FROM experience e JOIN people p ON p.id = e.person_id
   WHERE e.team_id = {p} AND (e.created_at, e.id) > ({p}, {p}) AND e.created_at >= {p}
   ORDER BY e.created_at, e.id LIMIT {p}"""


def in_dialect(sql: str, placeholder: str) -> str:
    """One of the SQL texts above with its `{p}` slots as a store writes its parameters."""
    return sql.format(p=placeholder)


def job_principal_from_row(job: Job, row: Any) -> Principal:
    """The principal of `job`'s device from a row of PRINCIPAL_FOR_JOB_SQL ("?" names when the person
    or the team is gone)."""
    return Principal(
        team_id=job.team_id,
        person_id=job.person_id,
        device_id=job.device_id,
        person=row["person"] if row else "?",
        team=row["team"] if row else "?",
        admin=bool(row["admin"]) if row else False,
    )


def job_values(
    job_id: str, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None, now: float
) -> tuple[Any, ...]:
    """ENQUEUE_JOB_SQL's values."""
    return (
        job_id,
        principal.team_id,
        principal.person_id,
        principal.device_id,
        tag,
        content,
        json.dumps(metadata) if metadata else None,
        now,
    )


def experience_values(
    principal: Principal,
    entry_id: str,
    store: str,
    verdict: str,
    reason: str,
    created_at: float | None,
    now: float,
) -> tuple[Any, ...]:
    """INSERT_EXPERIENCE_SQL's values; without `created_at` the door's clock stamps the opinion."""
    return (
        entry_id,
        principal.team_id,
        principal.person_id,
        principal.device_id,
        store,
        verdict,
        reason,
        now if created_at is None else created_at,
        now,
    )


def same_experience(
    existing: Any, principal: Principal, store: str, verdict: str, reason: str, created_at: float | None
) -> bool:
    """Whether the stored opinion `existing` (a row by column name) is the one being recorded again:
    a retry, not another opinion under the same id. Without `created_at` the rest decides."""
    return bool(
        existing["person_id"] == principal.person_id
        and existing["store"] == store
        and existing["verdict"] == verdict
        and existing["reason"] == reason
        and (created_at is None or abs(existing["created_at"] - created_at) < 0.001)
    )


def hook_stats_values(
    principal: Principal, hours: Sequence[tuple[str, str]], received: float
) -> list[tuple[Any, ...]]:
    """PUT_HOOK_STATS_SQL's values, a row per (hour, counts)."""
    return [
        (principal.team_id, principal.device_id, principal.person_id, hour, counts, received)
        for hour, counts in hours
    ]


def principal_from_row(row: Any) -> Principal:
    """Who a device token stands for, from a row of AUTHENTICATE_SQL."""
    return Principal(
        team_id=int(row["team_id"]),
        person_id=int(row["person_id"]),
        device_id=row["device_id"],
        person=row["person"],
        team=row["team"],
        admin=bool(row["admin"]),
    )


def memory_from_row(row: Any, person: str | None = None) -> Memory:
    """A memory from a row of the `memories` table as either store reads it (`sqlite3.Row` or a
    psycopg dict row: indexed by column name); `person` is the saving person's name where the query
    joined it."""
    return Memory(
        id=row["id"],
        container_tag=row["container_tag"],
        content=row["content"],
        kind=row["kind"],
        status=row["status"],
        version=row["version"],
        root_id=row["root_id"],
        previous_version_id=row["previous_version_id"],
        custom_id=row["custom_id"],
        metadata=json.loads(row["metadata"]) if row["metadata"] else None,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        superseded_at=row["superseded_at"],
        person=person,
    )


def job_from_row(row: Any) -> Job:
    """An extraction job from a row of `memory_extract_jobs` as either store reads it."""
    return Job(
        id=row["id"],
        team_id=int(row["team_id"]),
        person_id=int(row["person_id"]),
        device_id=row["device_id"],
        container_tag=row["container_tag"],
        content=row["content"],
        metadata=json.loads(row["metadata"]) if row["metadata"] else None,
        status=row["status"],
        attempts=row["attempts"],
        outcome=json.loads(row["outcome"]) if row["outcome"] else None,
        error=row["error"],
        created_at=row["created_at"],
        finished_at=row["finished_at"],
    )


def _pinned(metadata: Mapping[str, Any] | None) -> int:
    return int(bool(metadata and metadata.get("pinned") is True))


def version_values(memory_id: str, row: NewVersion, vector: object) -> tuple[Any, ...]:
    """`insert_version`'s values for (id, team_id, container_tag, custom_id, content, content_hash,
    kind, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
    created_at, updated_at, embedding, embedding_model); `vector` is the row's vector as the store
    keeps it (None without one)."""
    previous = row.previous
    return (
        memory_id,
        row.team_id,
        row.container_tag,
        row.custom_id,
        row.content,
        row.content_hash,
        row.kind,
        1 if previous is None else previous.version + 1,
        memory_id if previous is None else previous.root_id,
        None if previous is None else previous.id,
        _pinned(row.metadata),
        json.dumps(row.metadata) if row.metadata else None,
        row.person_id,
        row.device_id,
        row.created_at,
        row.updated_at,
        vector,
        None if row.vector is None else row.vector_model,
    )


def imported_values(row: ImportedVersion, vector: object) -> tuple[Any, ...]:
    """`insert_imported`'s values for (id, team_id, container_tag, custom_id, content, content_hash,
    kind, status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
    created_at, updated_at, superseded_at, embedding, embedding_model); `vector` as in
    `version_values`."""
    return (
        row.id,
        row.team_id,
        row.container_tag,
        row.custom_id,
        row.content,
        row.content_hash,
        row.kind,
        row.status,
        row.version,
        row.root_id,
        row.previous_version_id,
        _pinned(row.metadata),
        json.dumps(row.metadata) if row.metadata else None,
        row.person_id,
        row.device_id,
        row.created_at,
        row.updated_at,
        row.superseded_at,
        vector,
        None if row.vector is None else row.vector_model,
    )


#: a change log row as both stores read it: (kind, team id, container tag, memory id or None).
ChangeLogRow = tuple[str, int, str, str | None]


def outside_changes(
    rows: Iterable[ChangeLogRow],
    held: Collection[SpaceKey],
    index_state: Callable[
        [dict[str, SpaceKey]], tuple[dict[SpaceKey, list[IndexRow]], dict[SpaceKey, list[str]]]
    ],
) -> OutsideChanges:
    """What a run of change log rows means to indexes holding the spaces `held`: whole spaces, teams
    and aliases as logged, and the changed memories of `held` spaces as `index_state` finds them now
    (the store's own lookup, see `split_index_state`); `everything` for a kind this door does not
    know (written by a newer door)."""
    spaces: set[SpaceKey] = set()
    teams: set[int] = set()
    aliases = False
    wanted: dict[str, SpaceKey] = {}
    for kind, team_id, tag, memory_id in rows:
        key = (int(team_id), str(tag))
        if kind == "memory":
            if key in held:
                wanted[str(memory_id)] = key
        elif kind == "space":
            spaces.add(key)
        elif kind == "team":
            teams.add(key[0])
        elif kind == "aliases":
            aliases = True
        else:  # a newer door's kind of change
            return OutsideChanges(everything=True, seen=True)
    current, gone = index_state(wanted)
    return OutsideChanges(
        spaces=frozenset(spaces),
        teams=frozenset(teams),
        current=current,
        gone=gone,
        aliases=aliases,
        seen=True,
    )


def split_index_state(
    wanted: Mapping[str, SpaceKey], found: Iterable[IndexRow]
) -> tuple[dict[SpaceKey, list[IndexRow]], dict[SpaceKey, list[str]]]:
    """Per space, the `wanted` memories still searchable (`found`, in save order) and the ids of
    those that are not any more."""
    current: dict[SpaceKey, list[IndexRow]] = {}
    seen: set[str] = set()
    for row in found:
        current.setdefault(wanted[row.id], []).append(row)
        seen.add(row.id)
    gone: dict[SpaceKey, list[str]] = {}
    for memory_id, key in wanted.items():
        if memory_id not in seen:
            gone.setdefault(key, []).append(memory_id)
    return current, gone


@dataclass(frozen=True)
class BrowseRow:
    """One row of a browsing page: a current memory (with `person` set) and the device that saved it."""

    memory: Memory
    device_id: str | None


@dataclass(frozen=True)
class PurgeCount:
    """What a purge removed (or, dry, would remove): memory rows of every status, of which
    `current` were current, and extraction jobs."""

    memories: int
    current: int
    jobs: int


@dataclass(frozen=True)
class VectorTask:
    """A current memory that lacks a vector of the embedder in use."""

    id: str
    team_id: int
    container_tag: str
    content: str
    content_hash: str


@runtime_checkable
class ChangeLogStore(Protocol):
    """A store whose change log can say what changed since a given position, by any process (this
    one included): PostgreSQL, and SQLite from schema v6. An index snapshot of such a store is kept
    whatever its own door writes afterwards: its stamp holds the position it reflects, and a later
    start applies the log from there (`door/indexes.py`)."""

    def index_identity(self) -> str:
        """Which database this is, as a snapshot stamp names it: two databases (even of one name on
        two servers) never give the same answer; no password or host in it."""
        ...

    def unstamped_snapshot_position(self) -> int | None:
        """Where a snapshot whose stamp names neither database nor position stands in the change log:
        0 when the log began with the file that snapshot was written for (SQLite, whose log came in a
        later schema and starts at 0), None when such a snapshot cannot be placed (PostgreSQL)."""
        ...

    def change_position(self) -> int | None:
        """The change counter up to which `changes_elsewhere` has reported (None before its first
        call): the indexes the service keeps hold every change up to it."""
        ...

    def changes_since(self, position: int, held: Collection[SpaceKey]) -> OutsideChanges:
        """Every change committed after counter value `position` up to now, by any process, with
        the changed memories of `held` as they are now; `everything` when the log no longer
        reaches back to `position` (pruned) or cannot tell. Does not move `changes_elsewhere`'s
        position."""
        ...


class Store(Protocol):
    """Rows in, rows out. See the module docstring for the conventions."""

    #: a short name for logs and /healthz ("sqlite", "postgresql").
    name: str
    #: the database's version for the start line and /healthz (SQLite's library, PostgreSQL's server).
    version: str

    def describe(self) -> str:
        """Where the data lives, for the door's start line (never a password)."""
        ...

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction; nested calls join the outer one."""
        ...

    def is_damage(self, exc: BaseException) -> bool:
        """Whether `exc` says the stored data is damaged (background work then stops for good)."""
        ...

    def changed_elsewhere(self) -> bool:
        """True when another process (or connection) committed a change since the last call."""
        ...

    def changes_elsewhere(self, held: Collection[SpaceKey]) -> OutsideChanges:
        """What another process (or connection) committed since the last call (of this or of
        `changed_elsewhere`: both move one position), with the changed memories of the spaces in
        `held` as they are now; `OutsideChanges.everything` when the store cannot tell."""
        ...

    def write_problem(self) -> str | None:
        """Why a write would fail now (no room left), or None; cheap and read-only (for /healthz).
        Raises StoreUnavailable when a database server cannot be reached."""
        ...

    # ---------------------------------------------------------------- devices and tokens

    def create_device(
        self, *, person: str, team: str = "local", admin: bool = False, label: str | None = None
    ) -> tuple[str, str]:
        """A new device (and its person and team, if new). Returns (device id, token), the token
        shown only here: the store keeps its hash."""
        ...

    def authenticate(self, token: str) -> Principal | None: ...

    def list_devices(self) -> list[dict[str, Any]]: ...

    def revoke_device(self, device_id: str) -> int | None:
        """Revoke an active device and cancel its queued and running extraction jobs (a running one
        then writes nothing: `job_may_write`). How many jobs were cancelled; None when there is no
        active device `device_id`."""
        ...

    def set_device_admin(self, device_id: str, admin: bool) -> bool:
        """Promote or demote one active device (admin is a device's, not its person's); False when
        there is no active device `device_id`."""
        ...

    def principal_for_job(self, job: Job) -> Principal: ...

    # ---------------------------------------------------------------- aliases

    def canonical_tag(self, team_id: int, tag: str) -> str:
        """The tag `tag` is an alias of, or `tag` itself."""
        ...

    def aliases_of(self, team_id: int, canonical: str) -> list[str]:
        """The tags that are aliases of `canonical`, sorted."""
        ...

    def put_alias(self, team_id: int, alias: str, canonical: str) -> None:
        """Make `alias` name `canonical`; tags that pointed at `alias` now point at `canonical`."""
        ...

    # ---------------------------------------------------------------- memories

    def get(self, team_id: int, memory_id: str) -> Memory | None: ...

    def versions(self, team_id: int, root_id: str) -> list[Memory]:
        """Every version of one memory, oldest first."""
        ...

    def current_version(self, team_id: int, root_id: str) -> Memory | None: ...

    def current_by_custom_id(self, team_id: int, tags: Sequence[str], custom_id: str) -> Memory | None: ...

    def current_by_hash(self, team_id: int, tags: Sequence[str], content_hash: str) -> Memory | None:
        """The newest current unpinned row of the tags with that content hash (and the same for
        `current_by_custom_id`): a pin never stands in for an ordinary memory."""
        ...

    def current_by_ids(self, team_id: int, ids: Sequence[str]) -> dict[str, Memory]:
        """The current rows among `ids`, with the saving person's name."""
        ...

    def updated_at(self, team_id: int, ids: Sequence[str]) -> dict[str, float]:
        """Last-change time of each current memory among `ids`."""
        ...

    def count_current(self, team_id: int, tags: Sequence[str]) -> int:
        """Current unpinned memories of `tags`: what the space's indexes hold (`index_rows`), so a
        snapshot's count is compared with the same count (a pin is never searched nor indexed)."""
        ...

    def pinned(self, team_id: int, tags: Sequence[str]) -> list[Memory]:
        """Current pinned memories, oldest first."""
        ...

    def recent(self, team_id: int, tags: Sequence[str], limit: int) -> list[Memory]:
        """Current unpinned memories, most recently changed first."""
        ...

    def page_current(
        self, team_id: int, tags: Sequence[str], limit: int, before: tuple[float, str] | None
    ) -> list[BrowseRow]:
        """Browsing: up to `limit` current unpinned memories of `tags`, newest first.

        The order is (`updated_at` descending, then `id` descending), a total order over the rows.
        With `before` = (updated_at, id) of the last row of a page, only rows strictly after it in that
        order come back (a keyset, never an offset): a row written meanwhile (newer) or retired
        meanwhile never shifts or repeats what the next page holds. Each row carries the saving
        person's name (`Memory.person`) and the device id that saved it."""
        ...

    def index_rows(self, team_id: int, tag: str) -> Iterable[IndexRow]:
        """Every current unpinned memory of one tag, in save order (pins are never searched;
        `current_vectors` and `vectors_missing` leave them out too)."""
        ...

    def team_named(self, team: str) -> int | None:
        """The id of the team named `team`, or None when there is none."""
        ...

    def purge(self, team_id: int, tags: Sequence[str] | None, *, dry_run: bool = False) -> PurgeCount:
        """Delete for good (an operator's reset, never an API call) every memory row of the team —
        current, superseded and forgotten, with their vectors — and every extraction job of the team,
        whatever its status; with `tags`, only those whose container tag is one of `tags`. One
        transaction. Devices, people, aliases and experience rows stay. With `dry_run`, counts what
        would go and deletes nothing."""
        ...

    def spaces(self, limit: int, team_id: int | None = None) -> list[tuple[int, str]]:
        """Up to `limit` (team, tag) holding a current memory, most recently changed first, equal
        last changes by team then tag; only team `team_id`'s when given."""
        ...

    def insert_version(self, row: NewVersion) -> str:
        """Insert a memory row as `current`; returns its new id."""
        ...

    def retire(self, memory_id: str, status: Literal["superseded", "forgotten"]) -> bool:
        """Mark a current row superseded or forgotten; False when it is no longer current."""
        ...

    # ---------------------------------------------------------------- export and import (whole history)

    def rows_page(
        self, team_id: int, tags: Sequence[str] | None, after: str | None, limit: int, *, own_global: str
    ) -> list[Memory]:
        """Up to `limit` rows of one team — every status: current, superseded and forgotten — of the
        tags `tags` (None: of every tag but the reserved ones, and of the reserved tag `own_global`,
        the caller's global space: other people's global spaces are never read), in the order they
        were inserted (`insert_version` and `insert_imported` alike), starting after the row whose id
        is `after` (None: from the first). The rows carry no person. An `after` that names no row of
        the team gives []."""
        ...

    def insert_imported(self, row: ImportedVersion) -> bool:
        """Insert `row` as given: its id, status, version, root, previous version and all three
        times (pinned when its metadata says `pinned: true`, as `insert_version` does). Nothing is
        checked about how it chains: the service does that. False, writing nothing, when a row with
        that id exists already in any team."""
        ...

    def expired_documents(self, key_prefix: str, before: float, limit: int) -> list[tuple[int, Memory]]:
        """(team id, memory) of up to `limit` current documents of any team whose customId starts with
        `key_prefix` and that were created before `before`, oldest first (the retention sweep)."""
        ...

    # ---------------------------------------------------------------- vectors

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

    # ---------------------------------------------------------------- extraction jobs

    def enqueue_job(
        self, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None
    ) -> str:
        """A new queued job's id. Raises QueueFull past the device's cap of waiting jobs, and
        DeviceRevoked when the device was revoked since its request was authenticated."""
        ...

    def get_job(self, team_id: int, job_id: str) -> Job | None: ...

    def requeue_interrupted_jobs(self, max_attempts: int) -> int:
        """At start: jobs left `running` go back to the queue (failed after `max_attempts`). A store
        several doors share takes back only its own and those whose door's lease ran out, never a
        job another live door is running."""
        ...

    def claim_job(self, after_device: str | None = None) -> Job | None:
        """The next queued job in a round over the devices that have one, now `running` (attempts
        counted), or None: the oldest job of the first such device after `after_device` (the
        device of the claimer's previous job) in device-id order, wrapping round; None starts the
        round. One device's backlog thus never holds another device's jobs back by more than one
        job per waiting device (`FAIR_JOB_ORDER_SQL`). Two claimers never get the same job; on a shared
        store a job whose door's lease ran out is claimable again."""
        ...

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None: ...

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        """Keep a running job's progress as its `outcome` (`{"progress": ...}`), inside the caller's
        transaction with the writes it records: a job resumed after a crash or a retry starts after
        the facts it already applied (`jobs.run_job`). Never on a job no longer this claimer's."""
        ...

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        """Put a running job back in the queue or mark it failed (never one cancelled meanwhile)."""
        ...

    def job_may_write(self, job: Job) -> bool:
        """Whether a claimed job is still running and its device still active. Inside the job's
        write transaction this is final: a revoke commits before it or waits for it."""
        ...

    # ---------------------------------------------------------------- experience log

    def record_experience(
        self,
        principal: Principal,
        *,
        entry_id: str,
        store: str,
        verdict: str,
        reason: str,
        created_at: float | None,
    ) -> ExperienceOutcome:
        """Insert one opinion, or say an identical one (`identical`) or a different one
        (`conflict`) already has that id."""
        ...

    def experience_count(self, team_id: int, since: float) -> int: ...

    def experience_page(
        self, team_id: int, since: float, after: tuple[float, str], limit: int
    ) -> list[dict[str, Any]]:
        """Up to `limit` rows created at or after `since` and after `after` in (created_at, id) order."""
        ...

    # ---------------------------------------------------------------- hook figures

    def put_hook_stats(self, principal: Principal, hours: Sequence[tuple[str, str]]) -> int:
        """Keep the caller's device's hourly hook figures: each `(hour, counts)` pair (`hour` as
        `YYYY-MM-DDTHH` in UTC, `counts` a JSON text) replaces whatever that device sent for that hour
        before, so a re-send changes nothing. One transaction; returns how many hours were written."""
        ...

    def hook_stats_since(self, team_id: int, since_hour: str) -> list[tuple[str, str, str]]:
        """The team's hourly hook figures of `since_hour` (`YYYY-MM-DDTHH`) and later, as
        `(device_id, hour, counts JSON text)` in (hour, device_id) order; never another team's."""
        ...

    def prune_hook_stats(self, before_hour: str, limit: int) -> int:
        """Delete up to `limit` hourly hook figures, of any team, of hours before `before_hour`
        (`YYYY-MM-DDTHH`); how many. One transaction; the caller repeats until it gets less than `limit`."""
        ...

    # ---------------------------------------------------------------- copying a store (migrate)

    def dump_rows(self, table: str, after: tuple[Any, ...] | None, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` rows of `table` in primary-key order after key `after` (None: from the start), each a
        dict of the SQLite column names to plain values; a memory's `embedding` as float32 bytes (or None).
        The columns are COPY_COLUMNS[table]; a table outside COPY_TABLES is a ValueError."""
        ...

    def load_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        """Insert rows as dump_rows gives them (from either store), keeping their keys; a row whose key is
        already there is left alone. Returns how many were inserted. One transaction: a row that breaks
        any other constraint fails the call and inserts nothing. New rows made after a load take keys
        after the loaded ones (a server store moves its sequences past them)."""
        ...
