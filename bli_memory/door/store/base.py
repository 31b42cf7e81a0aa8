"""What both stores share below their roles (`roles/`): the rows the door hands a store and gets
back (`NewVersion`, `IndexRow`, `OutsideChanges`, …), the SQL texts written once for both dialects
(`{p}` slots), the tables a copy moves, and the functions that turn a database row into the door's
model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from bli_memory.door.model import Job, Memory, Principal

if TYPE_CHECKING:
    import numpy as np

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


#: a space: (team id, its tag).
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


#: a change log row as both stores read it: (kind, team id, space tag, memory id or None).
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
