"""The embedded store: one SQLite file in WAL mode.

Strategy:
- `memories` holds every version of every memory. A row is `current`,
  `superseded` (an older version, kept as history) or `forgotten` (a
  tombstone: never hard-deleted). Versions of one memory share `root_id`.
- Keyword search is BM25 over an in-memory inverted index per space
  (`door/keyword.py`), built from the space's *current* rows on first use and
  kept in step with every write, so a superseded or forgotten row can never be
  found by text. (Schema v1-v2 kept an FTS5 table; its bm25() cost 2 us per
  matched row, most of a search's time. v3 drops it.)
- Vectors are float32 blobs on the row, searched exactly with numpy from a
  per-space matrix cached in memory and kept in step with every write (this
  Python's sqlite3 cannot load vector extensions).
- Both caches are dropped when a rollback may have undone what they hold, and
  when another connection has written to the file (`PRAGMA data_version`).
  Both hold at most SPACE_CACHE_MAX_SPACES spaces, least recently used out first:
  a search of a tag nobody saved in costs a few KB, and must not cost them forever.
- The file is private: the store creates its folder 0700 and the file 0600
  (SQLite gives `-wal` and `-shm` the file's mode), and checks an existing file
  for damage before anything writes to it (`check_integrity`).
- Every write is one `BEGIN IMMEDIATE` transaction with synchronous=FULL:
  a door killed at any instant loses no acknowledged write.
- All SQL runs under one lock on one connection; a local door's requests take
  milliseconds, and SQLite serialises writers anyway.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bli_memory.door import keyword, ranking
from bli_memory.door.errors import (
    Conflict,
    DoorError,
    Forbidden,
    InvalidRequest,
    NoMatch,
    NotFound,
    Unauthorized,
)
from bli_memory.door.model import Hit, Job, Memory, Principal, SaveResult, now_s

if TYPE_CHECKING:
    import numpy as np

    from bli_memory.door.embed import Embedder

SCHEMA_VERSION = 4
# Lookups by id write `+team_id` / `+status`: the unary plus keeps SQLite from choosing an index on
# those columns (it did, twice: 20-60 ms scans of a whole space instead of 100 id probes).
EMBED_ERROR_LOG_INTERVAL_S = 60.0
PAGE_CACHE_KIB = 64 * 1024
SPACE_TAGS_TTL_S = 5.0
MMAP_BYTES = 256 * 1024 * 1024
#: every column a Memory is built from: never the embedding blob (1.5 KB a row) where it is not used.
_MEMORY_COLUMN_NAMES = (
    "rowid id team_id container_tag custom_id content kind status version root_id previous_version_id "
    "pinned metadata person_id device_id created_at updated_at superseded_at"
).split()
_MEMORY_COLUMNS = ", ".join(_MEMORY_COLUMN_NAMES)
_MEMORY_COLUMNS_M = ", ".join(f"m.{name}" for name in _MEMORY_COLUMN_NAMES)
FORGET_CLOSEST_MIN_SIMILARITY = 0.85
TOKEN_PREFIX = "bli_"
SECONDS_PER_DAY = 86_400.0
PROFILE_DYNAMIC_COUNT = 8
PROFILE_RECENT_COUNT = 10
JOB_MAX_ATTEMPTS = 3
#: extract jobs one device may have waiting (queued or running); past it a save with extract is 429.
#: A turn queues one job and a worker drains them in milliseconds (seconds with an LLM): hundreds
#: waiting means a stuck worker or a runaway client, and each may hold 100 000 characters.
MAX_PENDING_JOBS_PER_DEVICE = 200
#: spaces whose keyword index and vector matrix stay in memory (least recently used out first).
SPACE_CACHE_MAX_SPACES = 512
#: (team, tag) -> tags-of-the-space answers kept for SPACE_TAGS_TTL_S.
SPACE_TAGS_CACHE_MAX = 4096
#: the start-up check for damage reads the whole file, linear in its size (100 000 memories, 230 MB:
#: 0.2-0.3 s on an idle machine, 1-2 s on a loaded one); a file too big to finish in this time is
#: served after it, with a line saying the check was partial.
INTEGRITY_CHECK_BUDGET_S = 5.0
FILE_MODE = 0o600
FOLDER_MODE = 0o700
#: what cancels a job whose device was revoked.
REVOKED_JOB_ERROR = "cancelled: its device was revoked"

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE teams (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at REAL NOT NULL
    );
    CREATE TABLE people (
        id INTEGER PRIMARY KEY,
        team_id INTEGER NOT NULL REFERENCES teams(id),
        name TEXT NOT NULL,
        admin INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        UNIQUE (team_id, name)
    );
    CREATE TABLE devices (
        id TEXT PRIMARY KEY,
        person_id INTEGER NOT NULL REFERENCES people(id),
        token_hash TEXT NOT NULL UNIQUE,
        label TEXT,
        created_at REAL NOT NULL,
        last_used_at REAL,
        revoked_at REAL
    );
    CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        team_id INTEGER NOT NULL REFERENCES teams(id),
        container_tag TEXT NOT NULL,
        custom_id TEXT,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT 'memory',
        status TEXT NOT NULL DEFAULT 'current',
        version INTEGER NOT NULL DEFAULT 1,
        root_id TEXT NOT NULL,
        previous_version_id TEXT,
        pinned INTEGER NOT NULL DEFAULT 0,
        metadata TEXT,
        person_id INTEGER,
        device_id TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        superseded_at REAL,
        embedding BLOB
    );
    CREATE INDEX memories_space ON memories (team_id, container_tag, status, updated_at);
    CREATE INDEX memories_root ON memories (root_id, version);
    CREATE INDEX memories_hash ON memories (team_id, container_tag, content_hash) WHERE status = 'current';
    CREATE INDEX memories_custom ON memories (team_id, container_tag, custom_id) WHERE status = 'current';
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content, space, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE container_aliases (
        team_id INTEGER NOT NULL REFERENCES teams(id),
        alias TEXT NOT NULL,
        canonical TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (team_id, alias)
    );
    CREATE TABLE memory_extract_jobs (
        id TEXT PRIMARY KEY,
        team_id INTEGER NOT NULL,
        person_id INTEGER NOT NULL,
        device_id TEXT NOT NULL,
        container_tag TEXT NOT NULL,
        content TEXT NOT NULL,
        metadata TEXT,
        status TEXT NOT NULL DEFAULT 'queued',
        attempts INTEGER NOT NULL DEFAULT 0,
        outcome TEXT,
        error TEXT,
        created_at REAL NOT NULL,
        started_at REAL,
        finished_at REAL
    );
    CREATE INDEX jobs_status ON memory_extract_jobs (status, created_at);
    CREATE TABLE experience (
        id TEXT PRIMARY KEY,
        team_id INTEGER NOT NULL,
        person_id INTEGER NOT NULL,
        device_id TEXT,
        store TEXT NOT NULL,
        verdict TEXT NOT NULL,
        reason TEXT NOT NULL,
        created_at REAL NOT NULL,
        received_at REAL NOT NULL
    );
    CREATE INDEX experience_time ON experience (team_id, created_at);
    """,
    # v2: vectors name the model that made them (so a model change never mixes vector spaces and
    # rows without a current vector are backfilled), and experience ids are scoped to their team
    # (one team can neither see nor block another's ids).
    2: """
    ALTER TABLE memories ADD COLUMN embedding_model TEXT;
    CREATE TABLE experience_v2 (
        id TEXT NOT NULL,
        team_id INTEGER NOT NULL,
        person_id INTEGER NOT NULL,
        device_id TEXT,
        store TEXT NOT NULL,
        verdict TEXT NOT NULL,
        reason TEXT NOT NULL,
        created_at REAL NOT NULL,
        received_at REAL NOT NULL,
        PRIMARY KEY (team_id, id)
    );
    INSERT INTO experience_v2 SELECT id, team_id, person_id, device_id, store, verdict, reason, created_at,
        received_at FROM experience;
    DROP TABLE experience;
    ALTER TABLE experience_v2 RENAME TO experience;
    CREATE INDEX experience_time ON experience (team_id, created_at);
    """,
    # v3: keyword search moved to an in-memory index (door/keyword.py); the FTS5 table goes.
    3: """
    DROP TABLE IF EXISTS memories_fts;
    """,
    # v4: admin is a property of one device, not of the person: pairing a second device of an admin
    # no longer hands it admin, and `pair --admin` no longer promotes the person's other devices.
    # Every device keeps what it had (its person's flag); `people.admin` stays (DROP COLUMN needs
    # SQLite 3.35) and is no longer read. Jobs of devices revoked before v4 are cancelled, and jobs
    # are found by device for the queue cap and for revoking.
    4: """
    ALTER TABLE devices ADD COLUMN admin INTEGER NOT NULL DEFAULT 0;
    UPDATE devices SET admin = (SELECT p.admin FROM people p WHERE p.id = devices.person_id);
    CREATE INDEX jobs_device ON memory_extract_jobs (device_id, status);
    UPDATE memory_extract_jobs SET status = 'cancelled', error = 'cancelled: its device was revoked'
        WHERE status IN ('queued', 'running')
        AND device_id IN (SELECT id FROM devices WHERE revoked_at IS NOT NULL);
    """,
}


class DamagedDatabase(Exception):
    """The file fails SQLite's own check for damage; nothing was written to it."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path} is damaged ({detail})")
        self.path = path
        self.detail = detail


def check_integrity(path: str | Path, budget_s: float = INTEGRITY_CHECK_BUDGET_S) -> bool:
    """Raise DamagedDatabase when `PRAGMA quick_check` finds damage in an existing file.

    Reads through a read-only connection, which never writes the file nor checkpoints its WAL.
    Returns True when the whole file was checked, False when `budget_s` ran out first (a file of
    millions of memories; what was read was sound). `quick_check` reads every page once but skips
    the index-against-table comparison of `integrity_check` (about half its cost).
    """
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30, check_same_thread=False)
    deadline = time.monotonic() + budget_s
    over_budget = threading.Event()

    def interrupt() -> None:  # the check runs inside one SQLite step: only an interrupt stops it
        over_budget.set()
        db.interrupt()

    def progress() -> int:  # between steps, for a budget that ran out before the check began
        if time.monotonic() >= deadline:
            over_budget.set()
            return 1
        return 0

    timer = threading.Timer(budget_s, interrupt)
    timer.daemon = True
    try:
        db.execute("PRAGMA busy_timeout = 30000")
        db.set_progress_handler(progress, 1)
        timer.start()
        try:
            rows = db.execute("PRAGMA quick_check(1)").fetchall()
        except sqlite3.OperationalError as exc:
            if over_budget.is_set():
                return False
            raise _damage_or(exc, str(path)) from None
        except sqlite3.DatabaseError as exc:
            raise _damage_or(exc, str(path)) from None
    finally:
        timer.cancel()
        timer.join()
        db.close()
    verdict = str(rows[0][0]) if rows else "no answer"
    if verdict != "ok":
        raise DamagedDatabase(str(path), f"quick_check: {verdict.splitlines()[0][:200]}")
    return True


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite found the file malformed (not: locked, busy, not a database at all)."""
    text = str(exc)
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "corrupt" in text)


def _damage_or(exc: sqlite3.DatabaseError, path: str) -> Exception:
    """A malformed file is damage; anything else (not a database at all, locked) stays itself."""
    return DamagedDatabase(path, str(exc)) if is_damage(exc) else exc


def create_private(path: Path) -> None:
    """Create the folder (0700, if missing) and an empty file (0600) for a new database. SQLite
    then makes `-wal` and `-shm` with the file's mode, whatever the umask."""
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


class _Lru(Generic[_Key, _Value]):
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


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


class _SpaceVectors:
    """The current vectors of one space, in memory: row i of `matrix` is `ids[i]`.

    Rows live in a buffer that doubles when full, so a save appends in amortised O(dim) instead of
    copying the whole matrix (150 MB at 100 000 memories); a removal moves the last row into the gap.
    """

    def __init__(self, ids: list[str], matrix: np.ndarray) -> None:
        self.ids = ids
        self._buffer = matrix
        self.index = {memory_id: row for row, memory_id in enumerate(ids)}

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


class SqliteStore:
    """The door's store over one SQLite file. Thread-safe; every method is one transaction."""

    name = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder | None = None,
        max_pending_jobs: int = MAX_PENDING_JOBS_PER_DEVICE,
    ) -> None:
        self.path = str(path)
        self.embedder = embedder
        self.max_pending_jobs = max_pending_jobs
        #: False when the start-up check ran out of time before the end of a very large file.
        self.checked_whole = True
        if self.path != ":memory:":
            file = Path(self.path)
            if file.exists() and file.stat().st_size > 0:
                self.checked_whole = check_integrity(file)  # before anything may write to it
            else:
                create_private(file)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute("PRAGMA busy_timeout = 30000")
        # A large page cache, and reads through mmap instead of a read() per page. Chosen for the FTS5
        # index of schema v1-v2 (BM25 over a broad query at 10 000 memories: 5.2 -> 2.6 ms); since v3
        # it serves the candidates' id lookups and the keyword index builds, not measured apart there.
        self._db.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
        self._db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        self._vectors: _Lru[tuple[int, str], _SpaceVectors] = _Lru(SPACE_CACHE_MAX_SPACES)
        self._keyword: _Lru[tuple[int, str], keyword.KeywordIndex] = _Lru(SPACE_CACHE_MAX_SPACES)
        self._data_version: int | None = None
        self._embed_error: tuple[float, str] | None = None
        self._space_tags: _Lru[tuple[int, str], tuple[float, tuple[str, ...]]] = _Lru(SPACE_TAGS_CACHE_MAX)
        self._embed_error_logged_at = 0.0
        #: set when rows may lack a vector of this embedder; the door's worker then backfills them.
        self.needs_backfill = embedder is not None and embedder.dim > 0
        self._migrate()

    # ------------------------------------------------------------------ plumbing

    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; nested calls join the outer one via a savepoint."""
        with self._lock:
            if self._db.in_transaction:
                name = new_id("sp")
                self._db.execute(f"SAVEPOINT {name}")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute(f"ROLLBACK TO {name}")
                    self._db.execute(f"RELEASE {name}")
                    self._drop_caches()  # they may hold rows the rollback undid
                    raise
                self._db.execute(f"RELEASE {name}")
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                self._drop_caches()  # they may hold rows the rollback undid
                raise
            self._db.execute("COMMIT")

    def _drop_caches(self) -> None:
        self._vectors.clear()
        self._keyword.clear()

    def _check_outside_writes(self) -> None:
        """Drop the caches when another connection (a second door, a script) wrote to the file.

        `PRAGMA data_version` changes only for commits made by other connections (call under the lock).
        """
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            if self._data_version is not None:
                self._drop_caches()
            self._data_version = version

    def _migrate(self) -> None:
        with self.atomic() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"database schema version {version} is newer than this door ({SCHEMA_VERSION}); upgrade bli-memory"
                )
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[step].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {step}")

    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------------ teams, people, devices

    def create_device(
        self, *, person: str, team: str = "local", admin: bool = False, label: str | None = None
    ) -> tuple[str, str]:
        """Create a device token for `person` in `team` (both made if new). Returns (device_id, token).

        `admin` is this device's alone: the person's other devices keep what they have. Only the
        token's hash is stored: the token is shown once, here.
        """
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        device_id = new_id("dev")
        now = now_s()
        with self.atomic() as db:
            db.execute("INSERT OR IGNORE INTO teams (name, created_at) VALUES (?, ?)", (team, now))
            team_id = db.execute("SELECT id FROM teams WHERE name = ?", (team,)).fetchone()[0]
            db.execute(
                "INSERT OR IGNORE INTO people (team_id, name, created_at) VALUES (?, ?, ?)",
                (team_id, person, now),
            )
            person_id = db.execute(
                "SELECT id FROM people WHERE team_id = ? AND name = ?", (team_id, person)
            ).fetchone()[0]
            db.execute(
                "INSERT INTO devices (id, person_id, token_hash, label, admin, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (device_id, person_id, hash_token(token), label, int(admin), now),
            )
        return device_id, token

    def authenticate(self, token: str) -> Principal | None:
        with self._lock:
            row = self._db.execute(
                """SELECT d.id AS device_id, p.id AS person_id, p.name AS person, d.admin AS admin,
                          t.id AS team_id, t.name AS team
                   FROM devices d JOIN people p ON p.id = d.person_id JOIN teams t ON t.id = p.team_id
                   WHERE d.token_hash = ? AND d.revoked_at IS NULL""",
                (hash_token(token),),
            ).fetchone()
        if row is None:
            return None
        return Principal(
            team_id=row["team_id"],
            person_id=row["person_id"],
            device_id=row["device_id"],
            person=row["person"],
            team=row["team"],
            admin=bool(row["admin"]),
        )

    def list_devices(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                """SELECT d.id, d.label, d.created_at, d.revoked_at, p.name AS person, d.admin, t.name AS team
                   FROM devices d JOIN people p ON p.id = d.person_id JOIN teams t ON t.id = p.team_id
                   ORDER BY d.created_at"""
            ).fetchall()
        return [dict(row) for row in rows]

    def revoke_device(self, device_id: str) -> int | None:
        """Revoke an active device and cancel its waiting and running extract jobs (a running one
        writes nothing: `job_may_write`). Returns how many jobs were cancelled; None when there is
        no active device `device_id`."""
        now = now_s()
        with self.atomic() as db:
            cursor = db.execute(
                "UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, device_id)
            )
            if cursor.rowcount != 1:
                return None
            cancelled = db.execute(
                """UPDATE memory_extract_jobs SET status = 'cancelled', error = ?, finished_at = ?
                   WHERE device_id = ? AND status IN ('queued', 'running')""",
                (REVOKED_JOB_ERROR, now, device_id),
            )
            return cancelled.rowcount

    def set_device_admin(self, device_id: str, admin: bool) -> bool:
        """Promote or demote one active device; False when there is no active device `device_id`."""
        with self.atomic() as db:
            cursor = db.execute(
                "UPDATE devices SET admin = ? WHERE id = ? AND revoked_at IS NULL", (int(admin), device_id)
            )
            return cursor.rowcount == 1

    # ------------------------------------------------------------------ spaces and aliases

    def canonical_tag(self, principal: Principal, tag: str) -> str:
        with self._lock:
            row = self._db.execute(
                "SELECT canonical FROM container_aliases WHERE team_id = ? AND alias = ?",
                (principal.team_id, tag),
            ).fetchone()
        return tag if row is None else str(row[0])

    def space_tags(self, principal: Principal, tag: str) -> list[str]:
        """Every tag that names the same space as `tag`, canonical first.

        Cached for SPACE_TAGS_TTL_S (every search and save asks, aliases change rarely): this door's
        own alias changes clear the cache at once, another process's show within the TTL."""
        key = (principal.team_id, tag)
        cached = self._space_tags.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return list(cached[1])
        tags = self._load_space_tags(principal, tag)
        self._space_tags.put(key, (time.monotonic() + SPACE_TAGS_TTL_S, tuple(tags)))
        return tags

    def _load_space_tags(self, principal: Principal, tag: str) -> list[str]:
        canonical = self.canonical_tag(principal, tag)
        with self._lock:
            rows = self._db.execute(
                "SELECT alias FROM container_aliases WHERE team_id = ? AND canonical = ? ORDER BY alias",
                (principal.team_id, canonical),
            ).fetchall()
        return [canonical, *(str(row[0]) for row in rows if row[0] != canonical)]

    def set_alias(self, principal: Principal, alias: str, canonical: str) -> dict[str, Any]:
        if not principal.admin:
            raise Forbidden("only an admin token may set container aliases")
        if alias == canonical:
            raise InvalidRequest("alias and canonical must differ")
        with self.atomic() as db:
            target = db.execute(
                "SELECT canonical FROM container_aliases WHERE team_id = ? AND alias = ?",
                (principal.team_id, canonical),
            ).fetchone()
            if target is not None:
                raise InvalidRequest(
                    f"{canonical!r} is itself an alias of {target[0]!r}; name the canonical tag"
                )
            db.execute(
                """INSERT INTO container_aliases (team_id, alias, canonical, created_at) VALUES (?, ?, ?, ?)
                   ON CONFLICT (team_id, alias) DO UPDATE SET canonical = excluded.canonical""",
                (principal.team_id, alias, canonical, now_s()),
            )
            # Tags that pointed at the new alias now point at its canonical: no chains.
            db.execute(
                "UPDATE container_aliases SET canonical = ? WHERE team_id = ? AND canonical = ?",
                (canonical, principal.team_id, alias),
            )
        self._space_tags.clear()
        return {"alias": alias, "canonical": canonical, "tags": self.space_tags(principal, canonical)}

    # ------------------------------------------------------------------ memories: reading

    def _memory(self, row: sqlite3.Row) -> Memory:
        metadata = json.loads(row["metadata"]) if row["metadata"] else None
        keys = row.keys()
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
            metadata=metadata,
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            superseded_at=row["superseded_at"],
            person=row["person"] if "person" in keys else None,
        )

    def get(self, principal: Principal, memory_id: str) -> Memory:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ? AND team_id = ?",
                (memory_id, principal.team_id),
            ).fetchone()
        if row is None:
            raise NotFound(f"no memory {memory_id!r}")
        return self._memory(row)

    def history(self, principal: Principal, memory_id: str) -> list[Memory]:
        root = self.get(principal, memory_id).root_id
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE root_id = ? AND team_id = ? ORDER BY version, created_at",
                (root, principal.team_id),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def count_current(self, principal: Principal, tag: str) -> int:
        tags = self.space_tags(principal, tag)
        marks = ",".join("?" * len(tags))
        with self._lock:
            row = self._db.execute(
                f"SELECT count(*) FROM memories WHERE team_id = ? AND status = 'current' "
                f"AND container_tag IN ({marks})",
                (principal.team_id, *tags),
            ).fetchone()
        return int(row[0])

    # ------------------------------------------------------------------ vectors

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
        first_line = str(exc).splitlines()[0][:200] if str(exc) else ""
        self._embed_error = (now_s(), f"{type(exc).__name__}: {first_line}".rstrip(": "))
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

    def backfill_vectors(self, batch: int = 64) -> int:
        """Give current memories without a vector of this embedder one (rows saved while it was
        down, under `none`, or by another model). Returns how many were done; 0 when none are left."""
        if self.embedder is None or self.embedder.dim == 0:
            return 0
        name = self.embedder.name
        with self._lock:
            rows = self._db.execute(
                """SELECT rowid, id, team_id, container_tag, content, content_hash FROM memories
                   WHERE status = 'current' AND (embedding_model IS NULL OR embedding_model != ?)
                   LIMIT ?""",
                (name, batch),
            ).fetchall()
        if not rows:
            self.needs_backfill = False
            return 0
        vectors = self._embed([row["content"] for row in rows], "passage")
        if vectors is None:
            return 0
        done = 0
        with self.atomic() as db:
            for row, vector in zip(rows, vectors, strict=True):
                cursor = db.execute(
                    """UPDATE memories SET embedding = ?, embedding_model = ?
                       WHERE rowid = ? AND status = 'current' AND content_hash = ?""",
                    (vector.astype("float32").tobytes(), name, row["rowid"], row["content_hash"]),
                )
                if cursor.rowcount == 1:
                    self._vector_added(row["team_id"], row["container_tag"], row["id"], vector)
                    done += 1
        return done

    def _space_vectors(self, team_id: int, tag: str) -> _SpaceVectors | None:
        """The cached matrix of a space's current vectors, loaded on first use (call under the lock)."""
        if self.embedder is None or self.embedder.dim == 0:
            return None
        key = (team_id, tag)
        cached = self._vectors.get(key)
        if cached is not None:
            return cached
        import numpy as np

        rows = self._db.execute(
            """SELECT id, embedding FROM memories WHERE team_id = ? AND container_tag = ?
               AND status = 'current' AND embedding IS NOT NULL AND embedding_model = ? ORDER BY rowid""",
            (team_id, tag, self.embedder.name),
        ).fetchall()
        dim = self.embedder.dim
        vectors = [np.frombuffer(row[1], dtype=np.float32) for row in rows if len(row[1]) == dim * 4]
        ids = [row[0] for row in rows if len(row[1]) == dim * 4]
        matrix = np.vstack(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
        cached = _SpaceVectors(ids=ids, matrix=matrix)
        self._vectors.put(key, cached)
        return cached

    def _vector_added(self, team_id: int, tag: str, memory_id: str, vector: np.ndarray | None) -> None:
        cached = self._vectors.get((team_id, tag))
        if cached is not None and vector is not None:
            cached.add(memory_id, vector)

    def _vector_removed(self, team_id: int, tag: str, memory_id: str) -> None:
        cached = self._vectors.get((team_id, tag))
        if cached is not None:
            cached.remove(memory_id)

    # ------------------------------------------------------------------ memories: writing

    def _insert(
        self,
        db: sqlite3.Connection,
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
        memory_id = new_id("mem")
        now = now_s()
        pinned = bool(metadata and metadata.get("pinned") is True)
        if previous is not None:
            kind = previous.kind
        db.execute(
            """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                   status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                   created_at, updated_at, embedding, embedding_model)
               VALUES (?, ?, ?, ?, ?, ?, ?, 'current', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                memory_id,
                principal.team_id,
                tag,
                custom_id,
                content,
                content_hash(content),
                kind,
                1 if previous is None else previous.version + 1,
                memory_id if previous is None else previous.root_id,
                None if previous is None else previous.id,
                int(pinned),
                json.dumps(metadata) if metadata else None,
                principal.person_id,
                principal.device_id,
                created_at if previous is None else previous.created_at,
                created_at if previous is None else now,
                None if vector is None else vector.astype("float32").tobytes(),
                None if vector is None or self.embedder is None else self.embedder.name,
            ),
        )
        self._vector_added(principal.team_id, tag, memory_id, vector)
        index = self._keyword.get((principal.team_id, tag))
        if index is not None:
            index.add(memory_id, content, principal.device_id, created_at if previous is None else now)
        return memory_id

    def _retire(self, db: sqlite3.Connection, memory: Memory, status: str) -> None:
        """Mark a current row superseded or forgotten and take it out of every search path."""
        row = db.execute(
            "SELECT rowid, team_id FROM memories WHERE id = ? AND status = 'current'", (memory.id,)
        ).fetchone()
        if row is None:
            raise Conflict(f"memory {memory.id!r} is no longer current")
        db.execute(
            "UPDATE memories SET status = ?, superseded_at = ? WHERE rowid = ?", (status, now_s(), row[0])
        )
        self._vector_removed(row[1], memory.container_tag, memory.id)
        index = self._keyword.get((row[1], memory.container_tag))
        if index is not None:
            index.remove(memory.id)

    def _current_by(
        self, db: sqlite3.Connection, principal: Principal, tags: Sequence[str], column: str, value: str
    ) -> Memory | None:
        # INDEXED BY: with ORDER BY updated_at the planner preferred walking the whole space in
        # memories_space order (88 ms per save at 100 000 memories) to probing the hash index.
        index = {"content_hash": "memories_hash", "custom_id": "memories_custom"}[column]
        marks = ",".join("?" * len(tags))
        row = db.execute(
            f"""SELECT {_MEMORY_COLUMNS} FROM memories INDEXED BY {index} WHERE team_id = ? AND status = 'current'
                AND container_tag IN ({marks}) AND {column} = ? ORDER BY updated_at DESC LIMIT 1""",
            (principal.team_id, *tags, value),
        ).fetchone()
        return None if row is None else self._memory(row)

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
        it, an exact duplicate of a current memory in the space is `unchanged`.
        """
        tags = self.space_tags(principal, tag)
        canonical = tags[0]
        vectors = self._embed([content], "passage")
        vector = None if vectors is None else vectors[0]
        when = now_s() if created_at is None else created_at
        with self.atomic() as db:
            if custom_id is not None:
                existing = self._current_by(db, principal, tags, "custom_id", custom_id)
                if existing is not None:
                    if existing.content == content and (metadata or None) == (existing.metadata or None):
                        return SaveResult(existing.id, existing.container_tag, "unchanged")
                    self._retire(db, existing, "superseded")
                    new = self._insert(
                        db,
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
                duplicate = self._current_by(db, principal, tags, "content_hash", content_hash(content))
                if duplicate is not None and duplicate.content == content:
                    return SaveResult(duplicate.id, duplicate.container_tag, "unchanged")
            new = self._insert(
                db,
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
        `vectors`, when given, are this store's embedder's vectors of `contents` computed elsewhere.
        """
        canonical = self.canonical_tag(principal, tag)
        if vectors is None:
            vectors = self._embed(list(contents), "passage")
        when = now_s() if created_at is None else created_at
        with self.atomic() as db:
            return [
                self._insert(
                    db,
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

    def update(self, principal: Principal, memory_id: str, content: str) -> Memory:
        """Replace what a current memory says; the old text stays as a superseded version."""
        current = self.get(principal, memory_id)
        if current.status != "current":
            latest = self._latest(principal, current.root_id)
            hint = f"; its current version is {latest.id!r}" if latest is not None else ""
            raise Conflict(f"memory {memory_id!r} is {current.status}{hint}", code="not_current")
        vectors = self._embed([content], "passage")
        with self.atomic() as db:
            self._retire(db, current, "superseded")
            new = self._insert(
                db,
                principal,
                tag=current.container_tag,
                content=content,
                vector=None if vectors is None else vectors[0],
                custom_id=current.custom_id,
                metadata=current.metadata,
                created_at=current.created_at,
                previous=current,
            )
        return self.get(principal, new)

    def _latest(self, principal: Principal, root_id: str) -> Memory | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE root_id = ? AND team_id = ? AND status = 'current'",
                (root_id, principal.team_id),
            ).fetchone()
        return None if row is None else self._memory(row)

    def forget(
        self,
        principal: Principal,
        tag: str,
        *,
        memory_id: str | None = None,
        content: str | None = None,
        query: str | None = None,
    ) -> tuple[Memory, str, float | None]:
        """Tombstone one memory. Returns (the memory, match kind, similarity for a closest match)."""
        tags = self.space_tags(principal, tag)
        if memory_id is not None:
            target = self.get(principal, memory_id)
            if target.container_tag not in tags:
                raise NotFound(f"no memory {memory_id!r} in this space")
            if target.status != "current":
                raise Conflict(f"memory {memory_id!r} is already {target.status}", code="not_current")
            with self.atomic() as db:
                self._retire(db, target, "forgotten")
            return target, "id", None
        if content is not None:
            with self.atomic() as db:
                found = self._current_by(db, principal, tags, "content_hash", content_hash(content))
                if found is None or found.content != content:
                    raise NoMatch("no current memory in this space has exactly that text")
                self._retire(db, found, "forgotten")
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
        with self.atomic() as db:
            self._retire(db, memory, "forgotten")
        return memory, "closest", similarity

    def _closest(self, principal: Principal, tags: Sequence[str], query: str) -> tuple[Memory, float] | None:
        """The current memory of the space most similar in meaning to `query`, with its cosine."""
        vectors = self._embed([query], "query")
        if vectors is None:
            return None
        with self._lock:
            self._check_outside_writes()
            similarity_of, ranked = self._vector_candidates(principal.team_id, tags, vectors[0])
            rows = self._rows_by_id(principal.team_id, ranked[:1])
        if not ranked or ranked[0] not in rows:
            return None
        return rows[ranked[0]], similarity_of(ranked[0]) or 0.0

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
    ) -> list[Hit]:
        """Hybrid search of a space (every tag that names it): keyword, meaning and recency, fused,
        and then the best rows' context (`ranking.spread_context`) unless `context` is False.

        `similarity` is the cosine of query and memory where the memory has a
        vector; `threshold` filters on it (rows without one are not filtered:
        with no embedder the door ranks by keyword and recency alone).
        """
        tags = self.space_tags(principal, tag)
        query_vectors = self._embed([q], "query")
        query_vector = None if query_vectors is None else query_vectors[0]
        now = now_s()
        with self._lock:
            self._check_outside_writes()
            keyword_ids = self._keyword_candidates(principal.team_id, tags, q)
            vector_ids: list[str] = []
            similarity_of: Callable[[str], float | None] = lambda _: None  # noqa: E731
            if query_vector is not None:
                similarity_of, vector_ids = self._vector_candidates(principal.team_id, tags, query_vector)
            candidate_ids = list(dict.fromkeys([*keyword_ids, *vector_ids]))
            if not candidate_ids:
                return []
            updated = self._updated_at(principal.team_id, candidate_ids)
        keyword_rank = {memory_id: rank for rank, memory_id in enumerate(keyword_ids)}
        live = [memory_id for memory_id in candidate_ids if memory_id in updated]
        similarities = {memory_id: similarity_of(memory_id) for memory_id in live}
        signals = [
            ranking.Signals(
                keyword_rank=keyword_rank.get(memory_id),
                similarity=similarities[memory_id],
                age_days=max(0.0, (now - updated[memory_id]) / SECONDS_PER_DAY),
            )
            for memory_id in live
        ]
        fused = dict(zip(live, ranking.fuse(signals), strict=True))
        if context and ranking.active().context > 0:
            fused = self._with_context(principal.team_id, tags, fused, updated)
        scored = list(fused.items())
        if threshold > 0:  # cosines can be negative: the default 0 must keep every row
            scored = [pair for pair in scored if (sim := similarities[pair[0]]) is None or sim >= threshold]
        scored.sort(key=lambda pair: (-pair[1], -updated[pair[0]]))
        top = scored[:limit]
        with self._lock:
            rows = self._rows_by_id(principal.team_id, [memory_id for memory_id, _ in top])
        vector_set = set(vector_ids)
        return [
            Hit(
                memory=rows[memory_id],
                similarity=similarities[memory_id],
                score=score,
                matched_by=tuple(
                    channel
                    for channel, found in (
                        ("keyword", memory_id in keyword_rank),
                        ("vector", memory_id in vector_set),
                    )
                    if found
                ),
            )
            for memory_id, score in top
            if memory_id in rows
        ]

    def _with_context(
        self, team_id: int, tags: Sequence[str], fused: dict[str, float], updated: Mapping[str, float]
    ) -> dict[str, float]:
        """`fused` after the best rows lend score to their context (`ranking.spread_context`).
        Neighbours come from the keyword indexes (save order, device, time)."""
        seeds = sorted(fused, key=lambda memory_id: (-fused[memory_id], -updated[memory_id]))
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
        return ranking.spread_context(fused, neighbours)

    def _updated_at(self, team_id: int, ids: Sequence[str]) -> dict[str, float]:
        """Last-change time of each current memory among `ids` (all fusion needs besides the signals)."""
        return {
            row[0]: row[1]
            for row in self._current_by_ids("SELECT m.id, m.updated_at FROM memories m", team_id, ids)
        }

    def _current_by_ids(self, select: str, team_id: int, ids: Sequence[str]) -> list[sqlite3.Row]:
        """`select` (over `memories m`) for the current rows of the team among `ids`, 500 ids a query.

        The one place this filter is written: `+team_id` / `+status` keep SQLite on the id index
        (tests/test_store_plans.py)."""
        rows: list[sqlite3.Row] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows += self._db.execute(
                f"{select} WHERE m.id IN ({marks}) AND +m.team_id = ? AND +m.status = 'current'",
                (*chunk, team_id),
            ).fetchall()
        return rows

    def _keyword_candidates(self, team_id: int, tags: Sequence[str], q: str) -> list[str]:
        """Ids of the best BM25 matches in the space, best first (call under the lock)."""
        terms = keyword.query_terms(q)
        if not terms:
            return []
        indexes = [self._keyword_index(team_id, tag) for tag in tags]
        return keyword.search_with_feedback(indexes, terms, ranking.KEYWORD_CANDIDATES)

    def _keyword_index(self, team_id: int, tag: str) -> keyword.KeywordIndex:
        """The keyword index of one tag's current memories, built on first use (call under the lock)."""
        index = self._keyword.get((team_id, tag))
        if index is None:
            rows = self._db.execute(
                """SELECT id, content, device_id, updated_at FROM memories WHERE team_id = ?
                   AND container_tag = ? AND status = 'current' ORDER BY rowid""",
                (team_id, tag),
            )
            index = keyword.KeywordIndex.build(rows)
            self._keyword.put((team_id, tag), index)
        return index

    def warm(self) -> int:
        """Build the keyword index (and vector matrix) of every space, busiest first; the count built.

        The door runs this in the background at start, so that the first search of a space does not
        pay for its index (0.5-0.6 s per 10 000 memories, docs/benchmarks.md). Only as many spaces
        as the caches hold: more would push out the busiest, built first.
        """
        with self._lock:
            spaces = self._db.execute(
                """SELECT team_id, container_tag FROM memories WHERE status = 'current'
                   GROUP BY team_id, container_tag ORDER BY max(updated_at) DESC LIMIT ?""",
                (SPACE_CACHE_MAX_SPACES,),
            ).fetchall()
        for team_id, tag in spaces:
            with self._lock:
                self._check_outside_writes()
                self._keyword_index(team_id, tag)
                self._space_vectors(team_id, tag)
        return len(spaces)

    def _vector_candidates(
        self, team_id: int, tags: Sequence[str], query_vector: np.ndarray
    ) -> tuple[Callable[[str], float | None], list[str]]:
        """(cosine of any memory of the space by id, the ids of the nearest VECTOR_CANDIDATES)."""
        import numpy as np

        spaces = [
            space for tag in tags if (space := self._space_vectors(team_id, tag)) is not None and space.ids
        ]
        if not spaces:
            return lambda _: None, []
        query = query_vector.astype(np.float32)
        sims = [space.matrix @ query for space in spaces]
        ids = [memory_id for space in spaces for memory_id in space.ids]
        flat = sims[0] if len(sims) == 1 else np.concatenate(sims)
        count = min(ranking.VECTOR_CANDIDATES, len(ids))
        top = np.argpartition(-flat, count - 1)[:count]
        top = top[np.argsort(-flat[top])]

        def similarity(memory_id: str) -> float | None:
            for space, values in zip(spaces, sims, strict=True):
                row = space.index.get(memory_id)
                if row is not None:
                    return float(values[row])
            return None

        return similarity, [ids[i] for i in top]

    def _rows_by_id(self, team_id: int, ids: Sequence[str]) -> dict[str, Memory]:
        select = f"SELECT {_MEMORY_COLUMNS_M}, p.name AS person FROM memories m LEFT JOIN people p ON p.id = m.person_id"
        return {row["id"]: self._memory(row) for row in self._current_by_ids(select, team_id, ids)}

    # ------------------------------------------------------------------ profile

    def profile(self, principal: Principal, tag: str, q: str | None = None) -> dict[str, Any]:
        tags = self.space_tags(principal, tag)
        marks = ",".join("?" * len(tags))
        with self._lock:
            pinned = self._db.execute(
                f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = ? AND status = 'current' AND pinned = 1
                    AND container_tag IN ({marks}) ORDER BY created_at""",
                (principal.team_id, *tags),
            ).fetchall()
            recent = self._db.execute(
                f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = ? AND status = 'current' AND pinned = 0
                    AND container_tag IN ({marks}) ORDER BY updated_at DESC, rowid DESC LIMIT ?""",
                (principal.team_id, *tags, PROFILE_RECENT_COUNT),
            ).fetchall()
        recent_memories = [self._memory(row) for row in recent]
        if q:
            dynamic = [
                hit.memory.content for hit in self.search(principal, tag, q, limit=PROFILE_DYNAMIC_COUNT)
            ]
        else:
            dynamic = [memory.content for memory in recent_memories[:PROFILE_DYNAMIC_COUNT]]
        return {
            "profile": {"static": [row["content"] for row in pinned], "dynamic": dynamic},
            "recent": [memory.to_json() for memory in recent_memories],
            "containerTag": tags[0],
            "searched": tags,
        }

    # ------------------------------------------------------------------ extraction jobs

    def enqueue_job(
        self, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None
    ) -> tuple[str, str]:
        """Write one durable job row; returns (job id, canonical tag).

        Refused with 429 `queue_full` when the device already has `max_pending_jobs` waiting or
        running, and with 401 when the device was revoked since its request was authenticated."""
        canonical = self.canonical_tag(principal, tag)
        job_id = new_id("job")
        with self.atomic() as db:
            active = db.execute(
                "SELECT 1 FROM devices WHERE id = ? AND revoked_at IS NULL", (principal.device_id,)
            ).fetchone()
            if active is None:
                raise Unauthorized("the token is unknown or revoked")
            pending = db.execute(
                """SELECT count(*) FROM memory_extract_jobs WHERE device_id = ?
                   AND status IN ('queued', 'running')""",
                (principal.device_id,),
            ).fetchone()[0]
            if pending >= self.max_pending_jobs:
                raise DoorError(
                    f"this device has {pending} extract jobs waiting, the most it may have; "
                    "save again when some are done",
                    code="queue_full",
                    status=429,
                )
            db.execute(
                """INSERT INTO memory_extract_jobs (id, team_id, person_id, device_id, container_tag, content,
                       metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    job_id,
                    principal.team_id,
                    principal.person_id,
                    principal.device_id,
                    canonical,
                    content,
                    json.dumps(metadata) if metadata else None,
                    now_s(),
                ),
            )
        return job_id, canonical

    def _job(self, row: sqlite3.Row) -> Job:
        return Job(
            id=row["id"],
            team_id=row["team_id"],
            person_id=row["person_id"],
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

    def get_job(self, principal: Principal, job_id: str) -> Job:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM memory_extract_jobs WHERE id = ? AND team_id = ?", (job_id, principal.team_id)
            ).fetchone()
        if row is None:
            raise NotFound(f"no job {job_id!r}")
        return self._job(row)

    def requeue_interrupted_jobs(self) -> int:
        """At start: a job left `running` by a killed door goes back to the queue (its work was
        never committed: a job's facts and its `done` mark land in one transaction)."""
        with self.atomic() as db:
            # a job that was running at every one of its attempts may be what kills the door
            db.execute(
                """UPDATE memory_extract_jobs SET status = 'failed', finished_at = ?,
                       error = 'interrupted by a door restart at each of its attempts'
                   WHERE status = 'running' AND attempts >= ?""",
                (now_s(), JOB_MAX_ATTEMPTS),
            )
            cursor = db.execute("UPDATE memory_extract_jobs SET status = 'queued' WHERE status = 'running'")
            return cursor.rowcount

    def claim_job(self) -> Job | None:
        with self.atomic() as db:
            row = db.execute(
                "SELECT * FROM memory_extract_jobs WHERE status = 'queued' ORDER BY created_at LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE memory_extract_jobs SET status = 'running', attempts = attempts + 1, started_at = ? "
                "WHERE id = ?",
                (now_s(), row["id"]),
            )
            claimed = db.execute("SELECT * FROM memory_extract_jobs WHERE id = ?", (row["id"],)).fetchone()
        return self._job(claimed)

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None:
        with self.atomic() as db:
            db.execute(
                "UPDATE memory_extract_jobs SET status = 'done', outcome = ?, error = NULL, finished_at = ? "
                "WHERE id = ? AND status = 'running'",
                (json.dumps(outcome), now_s(), job_id),
            )

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        """Put a running job back in the queue or mark it failed (never one cancelled meanwhile)."""
        with self.atomic() as db:
            db.execute(
                "UPDATE memory_extract_jobs SET status = ?, error = ?, finished_at = ? WHERE id = ? "
                "AND status = 'running'",
                ("queued" if retry else "failed", error, None if retry else now_s(), job_id),
            )

    def job_may_write(self, job: Job) -> bool:
        """Whether a claimed job is still running and its device still active. Inside the job's
        write transaction this is final: a revoke commits before it or waits for it.

        A job found with a revoked device is cancelled here (one queued before the revoke's
        cancel, or by a door older than schema v4)."""
        with self.atomic() as db:
            row = db.execute(
                """SELECT j.status, d.revoked_at FROM memory_extract_jobs j
                   LEFT JOIN devices d ON d.id = j.device_id WHERE j.id = ?""",
                (job.id,),
            ).fetchone()
            if row is None or row["status"] != "running":
                return False
            if row["revoked_at"] is not None:
                db.execute(
                    """UPDATE memory_extract_jobs SET status = 'cancelled', error = ?, finished_at = ?
                       WHERE id = ?""",
                    (REVOKED_JOB_ERROR, now_s(), job.id),
                )
                return False
        return True

    def principal_for_job(self, job: Job) -> Principal:
        with self._lock:
            row = self._db.execute(
                """SELECT p.name AS person, coalesce(d.admin, 0) AS admin, t.name AS team FROM people p
                   JOIN teams t ON t.id = p.team_id LEFT JOIN devices d ON d.id = ? WHERE p.id = ?""",
                (job.device_id, job.person_id),
            ).fetchone()
        return Principal(
            team_id=job.team_id,
            person_id=job.person_id,
            device_id=job.device_id,
            person=row["person"] if row else "?",
            team=row["team"] if row else "?",
            admin=bool(row["admin"]) if row else False,
        )

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
    ) -> int:
        """Insert one opinion. Returns 201 (inserted) or 200 (identical retry); raises Conflict (409).

        Without `created_at` the door's clock stamps the row, and a retry is identical when the rest is.
        """
        with self.atomic() as db:
            existing = db.execute(
                "SELECT * FROM experience WHERE team_id = ? AND id = ?", (principal.team_id, entry_id)
            ).fetchone()
            if existing is not None:
                same = (
                    existing["team_id"] == principal.team_id
                    and existing["person_id"] == principal.person_id
                    and existing["store"] == store
                    and existing["verdict"] == verdict
                    and existing["reason"] == reason
                    and (created_at is None or abs(existing["created_at"] - created_at) < 0.001)
                )
                if same:
                    return 200
                raise Conflict(f"experience entry {entry_id} exists with different content", code="conflict")
            db.execute(
                """INSERT INTO experience (id, team_id, person_id, device_id, store, verdict, reason, created_at,
                       received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    entry_id,
                    principal.team_id,
                    principal.person_id,
                    principal.device_id,
                    store,
                    verdict,
                    reason,
                    now_s() if created_at is None else created_at,
                    now_s(),
                ),
            )
        return 201

    def experience_rows(
        self, principal: Principal, since: float, *, page_rows: int = 1000, cap_rows: int = 50_000
    ) -> tuple[list[dict[str, Any]], int]:
        """The team's opinions since `since`, read in (created_at, id) pages up to `cap_rows`.

        Returns (rows, how many the window holds) so the caller can say when the read was capped.
        Pages are separate reads, not one snapshot (seed README, EXPERIENCE)."""
        with self._lock:
            total = int(
                self._db.execute(
                    "SELECT count(*) FROM experience WHERE team_id = ? AND created_at >= ?",
                    (principal.team_id, since),
                ).fetchone()[0]
            )
        rows: list[dict[str, Any]] = []
        after: tuple[float, str] = (since, "")
        while len(rows) < cap_rows:
            with self._lock:
                page = self._db.execute(
                    """SELECT e.id, e.store, e.verdict, e.reason, e.created_at, p.name AS person
                       FROM experience e JOIN people p ON p.id = e.person_id
                       WHERE e.team_id = ? AND (e.created_at, e.id) > (?, ?) AND e.created_at >= ?
                       ORDER BY e.created_at, e.id LIMIT ?""",
                    (principal.team_id, after[0], after[1], since, min(page_rows, cap_rows - len(rows))),
                ).fetchall()
            if not page:
                break
            rows.extend(dict(row) for row in page)
            after = (page[-1]["created_at"], page[-1]["id"])
        return rows, total
