"""The `Store` interface: what the door needs from a database, in rows.

A store keeps devices, aliases, memory rows (every version and tombstone), vectors, extraction jobs
and experience rows, and nothing else: no search policy, no caches of derived data, no HTTP. The
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

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from bli_memory.door.model import Job, Memory, Principal

if TYPE_CHECKING:
    import numpy as np

ExperienceOutcome = Literal["inserted", "identical", "conflict"]
#: extract jobs one device may have waiting (queued or running); past it a save with extract is 429.
#: A turn queues one job and a worker drains them in milliseconds (seconds with an LLM): hundreds
#: waiting means a stuck worker or a runaway client, and each may hold 100 000 characters.
MAX_PENDING_JOBS_PER_DEVICE = 200


class QueueFull(Exception):
    """The device already has as many extraction jobs waiting as the store allows."""

    def __init__(self, pending: int) -> None:
        super().__init__(f"{pending} extraction jobs waiting")
        self.pending = pending


class StoreFull(Exception):
    """No room to write: the store's disk, or its size limit, is full. The failed write left nothing
    behind (its transaction was rolled back); reads go on working."""


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
class IndexRow:
    """What a search index needs of a current memory: its id, text, device and last change."""

    id: str
    content: str
    device_id: str | None
    updated_at: float


@dataclass(frozen=True)
class VectorTask:
    """A current memory that lacks a vector of the embedder in use."""

    id: str
    team_id: int
    container_tag: str
    content: str
    content_hash: str


class Store(Protocol):
    """Rows in, rows out. See the module docstring for the conventions."""

    #: a short name for logs and /healthz ("sqlite", "postgresql").
    name: str

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

    def write_problem(self) -> str | None:
        """Why a write would fail now (no room left), or None; cheap and read-only (for /healthz)."""
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

    def current_by_hash(self, team_id: int, tags: Sequence[str], content_hash: str) -> Memory | None: ...

    def current_by_ids(self, team_id: int, ids: Sequence[str]) -> dict[str, Memory]:
        """The current rows among `ids`, with the saving person's name."""
        ...

    def updated_at(self, team_id: int, ids: Sequence[str]) -> dict[str, float]:
        """Last-change time of each current memory among `ids`."""
        ...

    def count_current(self, team_id: int, tags: Sequence[str]) -> int: ...

    def pinned(self, team_id: int, tags: Sequence[str]) -> list[Memory]:
        """Current pinned memories, oldest first."""
        ...

    def recent(self, team_id: int, tags: Sequence[str], limit: int) -> list[Memory]:
        """Current unpinned memories, most recently changed first."""
        ...

    def index_rows(self, team_id: int, tag: str) -> Iterable[IndexRow]:
        """Every current memory of one tag, in save order."""
        ...

    def spaces(self, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` (team, tag) holding a current memory, most recently changed first."""
        ...

    def insert_version(self, row: NewVersion) -> str:
        """Insert a memory row as `current`; returns its new id."""
        ...

    def retire(self, memory_id: str, status: Literal["superseded", "forgotten"]) -> bool:
        """Mark a current row superseded or forgotten; False when it is no longer current."""
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
        """At start: jobs left `running` go back to the queue (failed after `max_attempts`)."""
        ...

    def claim_job(self) -> Job | None: ...

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None: ...

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
