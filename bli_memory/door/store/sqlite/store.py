"""The embedded store: one SQLite file in WAL mode.

Strategy:
- `memories` holds every version of every memory. A row is `current`,
  `superseded` (an older version, kept as history) or `forgotten` (a
  tombstone: never hard-deleted). Versions of one memory share `root_id`.
- Vectors are float32 blobs on the row, tagged with the model that made them;
  searching them (and keyword search) is the memory service's job, over
  in-memory indexes it builds from `index_rows` and `current_vectors`.
- The file is private (folder 0700, files 0600) and an existing one is checked for damage before
  anything writes to it, within a short budget; a file too big for it is checked whole in the
  background, and damage found there makes every later write raise StoreDamaged (`files.py`).
- Every write is one `BEGIN IMMEDIATE` transaction with synchronous=FULL:
  a door killed at any instant loses no acknowledged write.
- All SQL runs under one lock on one connection; a local door's requests take
  milliseconds, and SQLite serialises writers anyway.
- A change log keeps index snapshots valid across writes (schema v6). Every transaction writing
  memories or aliases bumps one counter (`bli_changes`, a single row) just before its commit and
  writes, under the value it took, what it changed (`bli_change_log`: a memory, a whole space, a
  whole team, a team's aliases); the log keeps the newest CHANGE_LOG_KEEP_COMMITS transactions. A
  counter row rather than an AUTOINCREMENT key: one value per transaction (not per row), taken
  under SQLite's one write lock so values commit in their order, and the mark of pruning lives in
  the same row. `changes_since` reads what changed after a snapshot's counter value (a door
  killed after writing replays its own writes from there); `index_identity` is a random name the
  file got at migration. Another process's commit (`changes_elsewhere`, seen through
  `PRAGMA data_version`) still drops every index: one door serves a file, so it is rare.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bli_memory.door.model import Job, Memory, Principal, hash_text, new_id, new_token, now_s
from bli_memory.door.store.base import (
    AUTHENTICATE_SQL,
    COPY_COLUMNS,
    COPY_TABLES,
    ENQUEUE_JOB_SQL,
    EXPERIENCE_PAGE_SQL,
    FAIR_JOB_ORDER_SQL,
    INSERT_EXPERIENCE_SQL,
    JSON_COLUMNS,
    LIST_DEVICES_SQL,
    MAX_PENDING_JOBS_PER_DEVICE,
    PRIMARY_KEYS,
    PRINCIPAL_FOR_JOB_SQL,
    PUT_HOOK_STATS_SQL,
    SHARED_OR_OWN_GLOBAL_SQL,
    BrowseRow,
    DeviceRevoked,
    ExperienceOutcome,
    ImportedVersion,
    IndexRow,
    NewVersion,
    OutsideChanges,
    PurgeCount,
    QueueFull,
    SpaceKey,
    StoreDamaged,
    StoreFull,
    VectorTask,
    experience_values,
    hook_stats_values,
    imported_values,
    in_dialect,
    job_from_row,
    job_principal_from_row,
    job_values,
    memory_from_row,
    outside_changes,
    principal_from_row,
    same_experience,
    split_index_state,
    version_values,
)
from bli_memory.door.store.sqlite.files import (
    CHECK_PARTIAL,
    CHECKED_WHOLE,
    INTEGRITY_CHECK_BUDGET_S,
    EarlyCheck,
    IntegrityCheck,
    check_integrity,
    create_private,
    is_damage,
)
from bli_memory.door.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    import numpy as np

PAGE_CACHE_KIB = 64 * 1024
MMAP_BYTES = 256 * 1024 * 1024
#: with less free space than this on the database's disk, `write_problem` says a write would fail.
MIN_FREE_BYTES = 1024 * 1024
#: with fewer spare pages than this under a page limit (`limit_pages`), the same.
MIN_SPARE_PAGES = 8
#: what cancels a job whose device was revoked.
REVOKED_JOB_ERROR = "cancelled: its device was revoked"
#: ids per `IN (...)` lookup.
IDS_PER_QUERY = 500
#: every column a Memory is built from: never the embedding blob (1.5 KB a row) where it is not used.
_MEMORY_COLUMN_NAMES = (
    "rowid id team_id container_tag custom_id content kind status version root_id previous_version_id "
    "pinned metadata person_id device_id created_at updated_at superseded_at"
).split()
_MEMORY_COLUMNS = ", ".join(_MEMORY_COLUMN_NAMES)
_MEMORY_COLUMNS_M = ", ".join(f"m.{name}" for name in _MEMORY_COLUMN_NAMES)

_AUTHENTICATE = in_dialect(AUTHENTICATE_SQL, "?")
_PRINCIPAL_FOR_JOB = in_dialect(PRINCIPAL_FOR_JOB_SQL, "?")
_ENQUEUE_JOB = in_dialect(ENQUEUE_JOB_SQL, "?")
_FAIR_JOB_ORDER = in_dialect(FAIR_JOB_ORDER_SQL, "?")
_PUT_HOOK_STATS = in_dialect(PUT_HOOK_STATS_SQL, "?")
_INSERT_EXPERIENCE = in_dialect(INSERT_EXPERIENCE_SQL, "?")
_EXPERIENCE_PAGE = in_dialect(EXPERIENCE_PAGE_SQL, "?")


#: the change log keeps the rows of this many newest transactions (then pruned, a tenth at a time)
CHANGE_LOG_KEEP_COMMITS = 20_000
#: more log rows than this in one answer become the spaces they touch (rebuilt), not memory by memory
CHANGE_LOG_MAX_ROWS = 10_000
ChangeKind = Literal["memory", "space", "team", "aliases"]
Change = tuple[ChangeKind, int, str | None, str | None]

#: SQLite's result code for "database or disk is full".
SQLITE_FULL = 13


def _is_full(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's "database or disk is full" (the code, or its message where the
    code is not exposed)."""
    return isinstance(exc, sqlite3.Error) and (
        getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL or "database or disk is full" in str(exc)
    )


def _copied_table(table: str) -> str:
    """`table` when dump_rows/load_rows copy it; ValueError otherwise (a table name goes into SQL)."""
    if table not in COPY_TABLES:
        raise ValueError(f"not a copied table: {table!r}")
    return table


def _stored_value(table: str, column: str, value: Any) -> Any:
    """A dumped value as this store keeps it: JSON columns as text, bytes-like as bytes."""
    if column in JSON_COLUMNS.get(table, ()) and value is not None and not isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


class SqliteStore:
    """The door's rows in one SQLite file. Thread-safe; every write method is one transaction."""

    name = "sqlite"
    #: the schema version this code writes (a file is brought to it when opened).
    SCHEMA_VERSION = SCHEMA_VERSION
    version = sqlite3.sqlite_version

    def __init__(
        self,
        path: str | Path,
        *,
        max_pending_jobs: int = MAX_PENDING_JOBS_PER_DEVICE,
        integrity_budget_s: float = INTEGRITY_CHECK_BUDGET_S,
        early_check: EarlyCheck | None = None,
        change_log_keep_commits: int = CHANGE_LOG_KEEP_COMMITS,
        change_log_max_rows: int = CHANGE_LOG_MAX_ROWS,
    ) -> None:
        """Open (or create, private) the file. Raises DamagedDatabase, before any write, when an
        existing file fails SQLite's check for damage within `integrity_budget_s` (or `early_check`,
        the same check begun earlier)."""
        self.path = str(path)
        self.max_pending_jobs = max_pending_jobs
        self.change_log_keep_commits = max(1, change_log_keep_commits)
        self.change_log_max_rows = max(1, change_log_max_rows)
        #: what the open transaction changed (logged at its end), None outside one
        self._changes: list[Change] | None = None
        #: the counter value `changes_elsewhere` read last (None before its first call)
        self._seen: int | None = None
        self._identity: str | None = None
        #: False when the start-up check ran out of time before the end of a very large file.
        self.checked_whole = True
        if self.path != ":memory:":
            file = Path(self.path)
            if file.exists() and file.stat().st_size > 0:
                if early_check is not None and early_check.covers and early_check.path == file:
                    self.checked_whole = early_check.result()  # before anything writes
                else:
                    self.checked_whole = check_integrity(file, integrity_budget_s)
            else:
                create_private(file)
        #: the check for damage: whole at start, or `check_rest_in_background` carries it on.
        self.integrity = IntegrityCheck(self.path, CHECKED_WHOLE if self.checked_whole else CHECK_PARTIAL)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute("PRAGMA busy_timeout = 30000")
        # A large page cache, and reads through mmap instead of a read() per page: the search's id
        # lookups and the index builds read pages the last search read.
        self._db.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
        self._db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        self._data_version: int | None = None
        self._migrate()

    # ------------------------------------------------------------------ plumbing

    def describe(self) -> str:
        return f"sqlite {self.path}"

    def check_rest_in_background(self, notice: Callable[[str], None], wait_s: float = 0.0) -> bool:
        """When the start-up check did not reach the end of the file, check it whole on a thread of
        its own (read-only, lowest priority), from `integrity.go()` or after `wait_s`; damage found
        there goes to `notice` in one line and refuses every later write. Returns whether a check
        was started."""
        if self.integrity.state != CHECK_PARTIAL:
            return False
        self.integrity.start_background(notice, wait_s)
        return True

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; nested calls join the outer one via a savepoint."""
        with self._lock:
            if self._db.in_transaction:
                name = new_id("sp")
                self._db.execute(f"SAVEPOINT {name}")
                try:
                    yield
                except BaseException:
                    if self._db.in_transaction:  # SQLite may have rolled it all back (SQLITE_FULL)
                        self._db.execute(f"ROLLBACK TO {name}")
                        self._db.execute(f"RELEASE {name}")
                    raise
                self._db.execute(f"RELEASE {name}")
                return
            if self.integrity.damaged:  # found by the background check: never write to the file again
                raise StoreDamaged(f"{self.path} is damaged ({self.integrity.detail}); nothing was written")
            self._db.execute("BEGIN IMMEDIATE")
            self._changes = []
            try:
                yield
                if self._changes:
                    self._log_changes(self._changes)
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:  # SQLite may have rolled it back itself (SQLITE_FULL)
                    self._db.execute("ROLLBACK")
                if _is_full(exc):  # the outermost transaction names it once, for every writer
                    raise StoreFull(f"{self.path}: database or disk is full") from exc
                raise
            finally:
                self._changes = None

    def _changed(
        self, kind: ChangeKind, team_id: int, tag: str | None = None, memory_id: str | None = None
    ) -> None:
        """Note a change an index snapshot must learn of (call inside `transaction()`)."""
        if self._changes is not None:  # every write method runs inside one
            self._changes.append((kind, int(team_id), tag, memory_id))

    def _log_changes(self, changes: Sequence[Change]) -> None:
        """Bump the counter and log `changes` under its new value, at the end of the transaction
        (under SQLite's write lock: values commit in their order); prune the log past
        CHANGE_LOG_KEEP_COMMITS, a tenth of it at a time."""
        self._db.execute("UPDATE bli_changes SET counter = counter + 1 WHERE id = 1")
        row = self._db.execute("SELECT counter, pruned_through FROM bli_changes WHERE id = 1").fetchone()
        if row is None:
            return
        counter = int(row[0])
        self._db.executemany(
            "INSERT INTO bli_change_log (counter, kind, team_id, container_tag, memory_id) VALUES (?, ?, ?, ?, ?)",
            [(counter, *change) for change in dict.fromkeys(changes)],
        )
        keep = self.change_log_keep_commits
        if counter - int(row[1]) > keep + max(1, keep // 10):
            through = counter - keep
            self._db.execute("DELETE FROM bli_change_log WHERE counter <= ?", (through,))
            self._db.execute("UPDATE bli_changes SET pruned_through = ? WHERE id = 1", (through,))

    @contextmanager
    def _statement(self) -> Iterator[None]:
        """One write statement: inside a caller's transaction as it is, else in one of its own (a
        single statement needs no savepoint: it is atomic by itself)."""
        with self._lock:
            if self._db.in_transaction:
                yield
                return
            with self.transaction():
                yield

    def is_damage(self, exc: BaseException) -> bool:
        return isinstance(exc, StoreDamaged) or is_damage(exc)

    def found_damage(self, exc: BaseException) -> bool:
        """A request met damage while reading the file: refuse every later write, as when the
        background check finds it. True the first time (for the caller's one log line)."""
        if self.integrity.damaged:
            return False
        self.integrity.mark_damaged(str(exc).partition("\n")[0][:200] or type(exc).__name__)
        return True

    def changed_elsewhere(self) -> bool:
        """`PRAGMA data_version` changes only for commits made by other connections."""
        with self._lock:
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            changed = self._data_version is not None and version != self._data_version
            self._data_version = version
            return changed

    def changes_elsewhere(self, held: Collection[SpaceKey]) -> OutsideChanges:
        """Another connection's commit (rare: one door serves a file) says only that something
        changed. The counter is read before `data_version`: a commit landing between the two reads
        is then reported now, never held in a position the indexes lack."""
        with self._lock:
            self._seen = self._counter()[0]
            changed = self.changed_elsewhere()
        return OutsideChanges(everything=changed, seen=changed)

    def _counter(self) -> tuple[int, int]:
        """The change counter and the newest value whose log rows were pruned."""
        with self._lock:
            row = self._db.execute("SELECT counter, pruned_through FROM bli_changes WHERE id = 1").fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def unstamped_snapshot_position(self) -> int | None:
        """0: a snapshot stamped before this file had a change log reflects the file as it was when
        the log began, at counter 0 (the door that wrote it removed its stamps before writing)."""
        return 0

    def index_identity(self) -> str:
        """The random name this file got when its change log was made (a file made anew at the same
        path gets another; a copy keeps it, and its counter tells an older copy apart)."""
        if self._identity is None:
            with self._lock:
                row = self._db.execute("SELECT identity FROM bli_changes WHERE id = 1").fetchone()
            self._identity = f"sqlite:{row[0] if row else ''}"
        return self._identity

    def change_position(self) -> int | None:
        with self._lock:
            return self._seen

    def changes_since(self, position: int, held: Collection[SpaceKey]) -> OutsideChanges:
        """Every change committed after counter value `position` up to now, this store's own
        included (an index holding them takes them as no-ops), with the changed memories of `held`
        as they are now; `everything` when the log no longer reaches back to `position`."""
        with self._lock:
            counter, pruned_through = self._counter()
            if counter == position:
                return OutsideChanges()
            if counter < position or pruned_through > position:
                return OutsideChanges(everything=True, seen=True)
            return self._read_changes(position, counter, held)

    def _read_changes(self, seen: int, counter: int, held: Collection[SpaceKey]) -> OutsideChanges:
        """The log rows of the transactions in (seen, counter], and the changed memories of `held`
        spaces as they are now (call under the lock)."""
        window = "counter > ? AND counter <= ?"
        rows = self._db.execute(
            f"""SELECT counter, kind, team_id, container_tag, memory_id FROM bli_change_log
                WHERE {window} ORDER BY counter LIMIT ?""",
            (seen, counter, self.change_log_max_rows + 1),
        ).fetchall()
        if len(rows) > self.change_log_max_rows:  # too many to read one by one: whole spaces
            logged = int(
                self._db.execute(
                    f"SELECT count(DISTINCT counter) FROM bli_change_log WHERE {window}", (seen, counter)
                ).fetchone()[0]
            )
            rows = self._db.execute(
                f"""SELECT DISTINCT 0, CASE kind WHEN 'memory' THEN 'space' ELSE kind END, team_id,
                        container_tag, NULL FROM bli_change_log WHERE {window}""",
                (seen, counter),
            ).fetchall()
        else:
            logged = len({row[0] for row in rows})
        if logged < counter - seen:  # pruned meanwhile
            return OutsideChanges(everything=True, seen=True)
        return outside_changes((tuple(row[1:]) for row in rows), held, self._index_state)

    def _index_state(
        self, wanted: dict[str, SpaceKey]
    ) -> tuple[dict[SpaceKey, list[IndexRow]], dict[SpaceKey, list[str]]]:
        """Per space, the `wanted` memories an index holds now (in save order) and those it must not."""
        ids = list(wanted)
        rows: list[sqlite3.Row] = []
        with self._lock:
            for start in range(0, len(ids), IDS_PER_QUERY):
                chunk = ids[start : start + IDS_PER_QUERY]
                rows += self._db.execute(
                    f"""SELECT rowid, id, content, device_id, updated_at FROM memories
                        WHERE id IN ({",".join("?" * len(chunk))}) AND status = 'current' AND pinned = 0""",
                    chunk,
                ).fetchall()
        rows.sort(key=lambda row: int(row[0]))  # save order
        return split_index_state(wanted, (IndexRow(row[1], row[2], row[3], row[4]) for row in rows))

    def _migrate(self) -> None:
        with self.transaction():
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"database schema version {version} is newer than this door ({SCHEMA_VERSION}); upgrade bli-memory"
                )
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step]:
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {step}")

    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        """Close the file; a background check still running is stopped. After damage its read-only
        connection is closed last: while it is open the writer's close cannot checkpoint the WAL
        into the damaged file (and a read-only connection never checkpoints)."""
        with self._lock:
            self._db.close()
        self.integrity.close()

    def limit_pages(self, pages: int) -> None:
        """Cap the database at `pages` pages (SQLite's `max_page_count`): past it writes fail with
        "database or disk is full", as on a full disk."""
        with self._lock:
            self._db.execute(f"PRAGMA max_page_count = {int(pages)}")

    def write_problem(self) -> str | None:
        """Why a write would fail now (no room on the database's disk or under its page limit), or
        None. Reads only — one statvfs and three PRAGMAs, skipped while a write holds the store."""
        if self.path != ":memory:":
            try:
                disk = os.statvfs(Path(self.path).parent)
            except OSError as exc:
                return f"cannot inspect the database's disk: {exc.strerror}"
            if disk.f_bavail * disk.f_frsize < MIN_FREE_BYTES:
                return f"the disk holding {self.path} is full"
        if not self._lock.acquire(blocking=False):
            return None  # a write is in progress, so there was room a moment ago
        try:
            pages, limit, spare = (
                int(self._db.execute(f"PRAGMA {name}").fetchone()[0])
                for name in ("page_count", "max_page_count", "freelist_count")
            )
        finally:
            self._lock.release()
        if limit - pages + spare < MIN_SPARE_PAGES:
            return f"{self.path} has reached its size limit of {limit} pages"
        return None

    # ------------------------------------------------------------------ teams, people, devices

    def create_device(
        self, *, person: str, team: str = "local", admin: bool = False, label: str | None = None
    ) -> tuple[str, str]:
        token = new_token()
        device_id = new_id("dev")
        now = now_s()
        with self.transaction():
            db = self._db
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
                (device_id, person_id, hash_text(token), label, int(admin), now),
            )
        return device_id, token

    def authenticate(self, token: str) -> Principal | None:
        with self._lock:
            row = self._db.execute(_AUTHENTICATE, (hash_text(token),)).fetchone()
        return None if row is None else principal_from_row(row)

    def list_devices(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(LIST_DEVICES_SQL).fetchall()
        return [dict(row) for row in rows]

    def revoke_device(self, device_id: str) -> int | None:
        now = now_s()
        with self.transaction():
            cursor = self._db.execute(
                "UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, device_id)
            )
            if cursor.rowcount != 1:
                return None
            cancelled = self._db.execute(
                """UPDATE memory_extract_jobs SET status = 'cancelled', error = ?, finished_at = ?
                   WHERE device_id = ? AND status IN ('queued', 'running')""",
                (REVOKED_JOB_ERROR, now, device_id),
            )
            return cancelled.rowcount

    def set_device_admin(self, device_id: str, admin: bool) -> bool:
        with self._statement():
            cursor = self._db.execute(
                "UPDATE devices SET admin = ? WHERE id = ? AND revoked_at IS NULL", (int(admin), device_id)
            )
            return cursor.rowcount == 1

    def principal_for_job(self, job: Job) -> Principal:
        with self._lock:
            row = self._db.execute(_PRINCIPAL_FOR_JOB, (job.device_id, job.person_id)).fetchone()
        return job_principal_from_row(job, row)

    # ------------------------------------------------------------------ aliases

    def canonical_tag(self, team_id: int, tag: str) -> str:
        with self._lock:
            row = self._db.execute(
                "SELECT canonical FROM container_aliases WHERE team_id = ? AND alias = ?", (team_id, tag)
            ).fetchone()
        return tag if row is None else str(row[0])

    def aliases_of(self, team_id: int, canonical: str) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT alias FROM container_aliases WHERE team_id = ? AND canonical = ? ORDER BY alias",
                (team_id, canonical),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def put_alias(self, team_id: int, alias: str, canonical: str) -> None:
        with self.transaction():
            self._changed("aliases", team_id)
            self._db.execute(
                """INSERT INTO container_aliases (team_id, alias, canonical, created_at) VALUES (?, ?, ?, ?)
                   ON CONFLICT (team_id, alias) DO UPDATE SET canonical = excluded.canonical""",
                (team_id, alias, canonical, now_s()),
            )
            # Tags that pointed at the new alias now point at its canonical: no chains.
            self._db.execute(
                "UPDATE container_aliases SET canonical = ? WHERE team_id = ? AND canonical = ?",
                (canonical, team_id, alias),
            )

    # ------------------------------------------------------------------ memories: reading

    def _memory(self, row: sqlite3.Row) -> Memory:
        columns = row.keys()  # `in row` would look among the values of a sqlite3.Row
        return memory_from_row(row, row["person"] if "person" in columns else None)

    def get(self, team_id: int, memory_id: str) -> Memory | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ? AND team_id = ?", (memory_id, team_id)
            ).fetchone()
        return None if row is None else self._memory(row)

    def versions(self, team_id: int, root_id: str) -> list[Memory]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE root_id = ? AND team_id = ? ORDER BY version, created_at",
                (root_id, team_id),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def current_version(self, team_id: int, root_id: str) -> Memory | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE root_id = ? AND team_id = ? AND status = 'current'",
                (root_id, team_id),
            ).fetchone()
        return None if row is None else self._memory(row)

    def current_by_custom_id(self, team_id: int, tags: Sequence[str], custom_id: str) -> Memory | None:
        return self._current_by(team_id, tags, "custom_id", custom_id)

    def current_by_hash(self, team_id: int, tags: Sequence[str], content_hash: str) -> Memory | None:
        return self._current_by(team_id, tags, "content_hash", content_hash)

    def _current_by(self, team_id: int, tags: Sequence[str], column: str, value: str) -> Memory | None:
        # INDEXED BY: with ORDER BY updated_at the planner preferred walking the whole space in
        # memories_space order (88 ms per save at 100 000 memories) to probing the hash index.
        index = {"content_hash": "memories_hash", "custom_id": "memories_custom"}[column]
        marks = ",".join("?" * len(tags))
        with self._lock:
            row = self._db.execute(
                f"""SELECT {_MEMORY_COLUMNS} FROM memories INDEXED BY {index} WHERE team_id = ? AND status = 'current'
                    AND pinned = 0 AND container_tag IN ({marks}) AND {column} = ? ORDER BY updated_at DESC LIMIT 1""",
                (team_id, *tags, value),
            ).fetchone()
        return None if row is None else self._memory(row)

    def current_by_ids(self, team_id: int, ids: Sequence[str]) -> dict[str, Memory]:
        select = f"SELECT {_MEMORY_COLUMNS_M}, p.name AS person FROM memories m LEFT JOIN people p ON p.id = m.person_id"
        return {row["id"]: self._memory(row) for row in self._current_rows_by_ids(select, team_id, ids)}

    def updated_at(self, team_id: int, ids: Sequence[str]) -> dict[str, float]:
        return {
            row[0]: row[1]
            for row in self._current_rows_by_ids("SELECT m.id, m.updated_at FROM memories m", team_id, ids)
        }

    def _current_rows_by_ids(self, select: str, team_id: int, ids: Sequence[str]) -> list[sqlite3.Row]:
        """`select` (over `memories m`) for the current rows of the team among `ids`.

        The one place this filter is written. Lookups by id write `+team_id` / `+status`: the unary
        plus keeps SQLite from choosing an index on those columns (it did, twice: 20-60 ms scans of a
        whole space instead of 100 id probes; tests/door/store/test_sqlite_plans.py)."""
        rows: list[sqlite3.Row] = []
        with self._lock:
            for start in range(0, len(ids), IDS_PER_QUERY):
                chunk = ids[start : start + IDS_PER_QUERY]
                marks = ",".join("?" * len(chunk))
                rows += self._db.execute(
                    f"{select} WHERE m.id IN ({marks}) AND +m.team_id = ? AND +m.status = 'current'",
                    (*chunk, team_id),
                ).fetchall()
        return rows

    def count_current(self, team_id: int, tags: Sequence[str]) -> int:
        marks = ",".join("?" * len(tags))
        with self._lock:
            row = self._db.execute(
                f"SELECT count(*) FROM memories WHERE team_id = ? AND status = 'current' AND pinned = 0 "
                f"AND container_tag IN ({marks})",
                (team_id, *tags),
            ).fetchone()
        return int(row[0])

    def pinned(self, team_id: int, tags: Sequence[str]) -> list[Memory]:
        marks = ",".join("?" * len(tags))
        with self._lock:
            rows = self._db.execute(
                f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = ? AND status = 'current' AND pinned = 1
                    AND container_tag IN ({marks}) ORDER BY created_at""",
                (team_id, *tags),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def recent(self, team_id: int, tags: Sequence[str], limit: int) -> list[Memory]:
        marks = ",".join("?" * len(tags))
        with self._lock:
            rows = self._db.execute(
                f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = ? AND status = 'current' AND pinned = 0
                    AND container_tag IN ({marks}) ORDER BY updated_at DESC, rowid DESC LIMIT ?""",
                (team_id, *tags, limit),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def page_current(
        self, team_id: int, tags: Sequence[str], limit: int, before: tuple[float, str] | None
    ) -> list[BrowseRow]:
        # One indexed walk per tag (memories_space), merged here: with `container_tag IN (...)` SQLite
        # sorted the whole space instead (250 ms a page at 100 000 memories and two tags; 0.5 ms so).
        after_cursor = "" if before is None else "AND (m.updated_at, m.id) < (?, ?)"
        cursor_values: tuple[Any, ...] = () if before is None else (float(before[0]), before[1])
        rows: list[sqlite3.Row] = []
        with self._lock:
            for tag in dict.fromkeys(tags):
                rows += self._db.execute(
                    f"""SELECT {_MEMORY_COLUMNS_M}, p.name AS person FROM memories m
                        LEFT JOIN people p ON p.id = m.person_id
                        WHERE m.team_id = ? AND m.container_tag = ? AND m.status = 'current' AND m.pinned = 0
                        {after_cursor} ORDER BY m.updated_at DESC, m.id DESC LIMIT ?""",
                    (team_id, tag, *cursor_values, limit),
                ).fetchall()
        rows.sort(key=lambda row: (row["updated_at"], row["id"]), reverse=True)
        return [BrowseRow(self._memory(row), row["device_id"]) for row in rows[:limit]]

    def index_rows(self, team_id: int, tag: str) -> Iterable[IndexRow]:
        with self._lock:
            rows = self._db.execute(
                """SELECT id, content, device_id, updated_at FROM memories WHERE team_id = ?
                   AND container_tag = ? AND status = 'current' AND pinned = 0 ORDER BY rowid""",
                (team_id, tag),
            ).fetchall()
        return [IndexRow(row[0], row[1], row[2], row[3]) for row in rows]

    def spaces(self, limit: int, team_id: int | None = None) -> list[tuple[int, str]]:
        """A loose index scan: one seek per (team, tag) in `memories_space`, then one seek for its
        newest current row. A GROUP BY over the table read every row's index entry (5.2 s of a door's
        start at 1 000 000 memories in one space); this reads a few pages per space. Equal last
        changes are ordered by team and tag."""
        newest: list[tuple[float, int, str]] = []
        with self._lock:
            key = self._db.execute(
                "SELECT team_id, container_tag FROM memories WHERE team_id >= ? ORDER BY team_id, container_tag LIMIT 1",
                (0 if team_id is None else team_id,),
            ).fetchone()
            only = team_id
            while key is not None and (only is None or int(key[0]) == only):
                team_id, tag = int(key[0]), str(key[1])
                changed = self._db.execute(  # the end of the space's run in the index, not a max() scan
                    """SELECT updated_at FROM memories WHERE team_id = ? AND container_tag = ?
                       AND status = 'current' ORDER BY updated_at DESC LIMIT 1""",
                    (team_id, tag),
                ).fetchone()
                if changed is not None:
                    newest.append((float(changed[0]), team_id, tag))
                # two seeks, not `(team_id, container_tag) > (?, ?)`: SQLite walks that row value
                # through the whole space's run of the index (70 ms at 1 000 000)
                key = (
                    self._db.execute(
                        """SELECT team_id, container_tag FROM memories WHERE team_id = ? AND container_tag > ?
                       ORDER BY container_tag LIMIT 1""",
                        (team_id, tag),
                    ).fetchone()
                    or self._db.execute(
                        """SELECT team_id, container_tag FROM memories WHERE team_id > ?
                       ORDER BY team_id, container_tag LIMIT 1""",
                        (team_id,),
                    ).fetchone()
                )
        newest.sort(key=lambda space: (-space[0], space[1], space[2]))
        return [(team_id, tag) for _, team_id, tag in newest[:limit]]

    def team_named(self, team: str) -> int | None:
        with self._lock:
            row = self._db.execute("SELECT id FROM teams WHERE name = ?", (team,)).fetchone()
        return None if row is None else int(row[0])

    def purge(self, team_id: int, tags: Sequence[str] | None, *, dry_run: bool = False) -> PurgeCount:
        where = "team_id = ?"
        values: list[Any] = [team_id]
        if tags is not None:
            where += f" AND container_tag IN ({','.join('?' * len(tags))})"
            values += list(tags)
        with self.transaction():
            memories, current = self._db.execute(
                f"SELECT count(*), coalesce(sum(status = 'current'), 0) FROM memories WHERE {where}", values
            ).fetchone()
            jobs = self._db.execute(
                f"SELECT count(*) FROM memory_extract_jobs WHERE {where}", values
            ).fetchone()[0]
            if not dry_run:
                if tags is None:
                    self._changed("team", team_id)
                for tag in tags or ():
                    self._changed("space", team_id, tag)
                self._db.execute(f"DELETE FROM memories WHERE {where}", values)
                self._db.execute(f"DELETE FROM memory_extract_jobs WHERE {where}", values)
        return PurgeCount(memories=int(memories), current=int(current), jobs=int(jobs))

    # ------------------------------------------------------------------ memories: writing

    def insert_version(self, row: NewVersion) -> str:
        memory_id = new_id("mem")
        with self._statement():
            self._changed("memory", row.team_id, row.container_tag, memory_id)
            self._db.execute(
                """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                       status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                       created_at, updated_at, embedding, embedding_model)
                   VALUES (?, ?, ?, ?, ?, ?, ?, 'current', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                version_values(
                    memory_id, row, None if row.vector is None else row.vector.astype("float32").tobytes()
                ),
            )
        return memory_id

    def retire(self, memory_id: str, status: Literal["superseded", "forgotten"]) -> bool:
        with self._statement():
            retired = self._db.execute(
                "SELECT team_id, container_tag FROM memories WHERE id = ? AND status = 'current'",
                (memory_id,),
            ).fetchone()
            if retired is None:
                return False
            self._db.execute(
                "UPDATE memories SET status = ?, superseded_at = ? WHERE id = ? AND status = 'current'",
                (status, now_s(), memory_id),
            )
            self._changed("memory", retired[0], retired[1], memory_id)
            return True

    # ------------------------------------------------------------------ export and import (whole history)

    def rows_page(
        self, team_id: int, tags: Sequence[str] | None, after: str | None, limit: int, *, own_global: str
    ) -> list[Memory]:
        with self._lock:
            after_rowid = 0
            if after is not None:
                found = self._db.execute(
                    "SELECT rowid FROM memories WHERE id = ? AND team_id = ?", (after, team_id)
                ).fetchone()
                if found is None:
                    return []
                after_rowid = int(found[0])
            tag_values: tuple[str, ...]
            if tags is None:
                in_tags, tag_values = " AND " + in_dialect(SHARED_OR_OWN_GLOBAL_SQL, "?"), (own_global,)
            else:
                in_tags, tag_values = f" AND container_tag IN ({','.join('?' * len(tags))})", tuple(tags)
            rows = self._db.execute(
                f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = ? AND rowid > ?{in_tags}
                    ORDER BY rowid LIMIT ?""",
                (team_id, after_rowid, *tag_values, limit),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def insert_imported(self, row: ImportedVersion) -> bool:
        with self._statement():
            if self._db.execute("SELECT 1 FROM memories WHERE id = ?", (row.id,)).fetchone() is not None:
                return False
            self._changed("memory", row.team_id, row.container_tag, row.id)
            self._db.execute(
                """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                       status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                       created_at, updated_at, superseded_at, embedding, embedding_model)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                imported_values(row, None if row.vector is None else row.vector.astype("float32").tobytes()),
            )
        return True

    def expired_documents(self, key_prefix: str, before: float, limit: int) -> list[tuple[int, Memory]]:
        # a prefix as a range (not LIKE, whose `_` and `%` would need escaping)
        with self._lock:
            rows = self._db.execute(
                f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE kind = 'document' AND status = 'current'
                    AND created_at < ? AND custom_id >= ? AND custom_id < ? ORDER BY created_at LIMIT ?""",
                (before, key_prefix, key_prefix + "\U0010ffff", limit),
            ).fetchall()
        return [(int(row["team_id"]), self._memory(row)) for row in rows]

    # ------------------------------------------------------------------ vectors

    def vectors_missing(self, model: str, limit: int) -> list[VectorTask]:
        with self._lock:
            rows = self._db.execute(
                """SELECT id, team_id, container_tag, content, content_hash FROM memories
                   WHERE status = 'current' AND pinned = 0 AND (embedding_model IS NULL OR embedding_model != ?)
                   LIMIT ?""",
                (model, limit),
            ).fetchall()
        return [VectorTask(row[0], row[1], row[2], row[3], row[4]) for row in rows]

    def set_vector(self, memory_id: str, content_hash: str, model: str, vector: np.ndarray) -> bool:
        with self._statement():
            cursor = self._db.execute(
                """UPDATE memories SET embedding = ?, embedding_model = ?
                   WHERE id = ? AND status = 'current' AND content_hash = ?""",
                (vector.astype("float32").tobytes(), model, memory_id, content_hash),
            )
            if cursor.rowcount != 1:
                return False
            space = self._db.execute(
                "SELECT team_id, container_tag FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()
            self._changed("memory", space[0], space[1], memory_id)
            return True

    def current_vectors(self, team_id: int, tag: str, model: str) -> Iterator[tuple[str, np.ndarray]]:
        import numpy as np

        with self._lock:
            rows = self._db.execute(
                """SELECT id, embedding FROM memories WHERE team_id = ? AND container_tag = ?
                   AND status = 'current' AND pinned = 0 AND embedding IS NOT NULL AND embedding_model = ?
                   ORDER BY rowid""",
                (team_id, tag, model),
            ).fetchall()
        for row in rows:
            yield row[0], np.frombuffer(row[1], dtype=np.float32)

    def nearest(
        self, team_id: int, tag: str, model: str, query: np.ndarray, k: int
    ) -> list[tuple[str, float]] | None:
        """None: the memory service searches this store's vectors in memory (`door/indexes.py`)."""
        return None

    def similarities(
        self, team_id: int, model: str, query: np.ndarray, ids: Sequence[str]
    ) -> dict[str, float] | None:
        return None

    def vectors_of(self, team_id: int, ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        import numpy as np

        select = "SELECT m.id, m.embedding, m.embedding_model FROM memories m"
        return {
            row[0]: np.frombuffer(row[1], dtype=np.float32)
            for row in self._current_rows_by_ids(select, team_id, list(dict.fromkeys(ids)))
            if row[1] is not None and row[2] == model
        }

    # ------------------------------------------------------------------ extraction jobs

    def enqueue_job(
        self, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None
    ) -> str:
        job_id = new_id("job")
        with self.transaction():
            active = self._db.execute(
                "SELECT 1 FROM devices WHERE id = ? AND revoked_at IS NULL", (principal.device_id,)
            ).fetchone()
            if active is None:
                raise DeviceRevoked(principal.device_id)
            pending = self._db.execute(
                """SELECT count(*) FROM memory_extract_jobs WHERE device_id = ?
                   AND status IN ('queued', 'running')""",
                (principal.device_id,),
            ).fetchone()[0]
            if pending >= self.max_pending_jobs:
                raise QueueFull(pending)
            self._db.execute(_ENQUEUE_JOB, job_values(job_id, principal, tag, content, metadata, now_s()))
        return job_id

    def _job(self, row: sqlite3.Row) -> Job:
        return job_from_row(row)

    def get_job(self, team_id: int, job_id: str) -> Job | None:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM memory_extract_jobs WHERE id = ? AND team_id = ?", (job_id, team_id)
            ).fetchone()
        return None if row is None else self._job(row)

    def requeue_interrupted_jobs(self, max_attempts: int) -> int:
        """A job left `running` by a killed door goes back to the queue (its work was never
        committed: a job's facts and its `done` mark land in one transaction)."""
        with self.transaction():
            # a job that was running at every one of its attempts may be what kills the door
            self._db.execute(
                """UPDATE memory_extract_jobs SET status = 'failed', finished_at = ?,
                       error = 'interrupted by a door restart at each of its attempts'
                   WHERE status = 'running' AND attempts >= ?""",
                (now_s(), max_attempts),
            )
            cursor = self._db.execute(
                "UPDATE memory_extract_jobs SET status = 'queued' WHERE status = 'running'"
            )
            return cursor.rowcount

    def claim_job(self, after_device: str | None = None) -> Job | None:
        with self.transaction():
            row = self._db.execute(
                f"SELECT * FROM memory_extract_jobs WHERE status = 'queued' ORDER BY {_FAIR_JOB_ORDER} LIMIT 1",
                (after_device or "",),
            ).fetchone()
            if row is None:
                return None
            self._db.execute(
                "UPDATE memory_extract_jobs SET status = 'running', attempts = attempts + 1, started_at = ? "
                "WHERE id = ?",
                (now_s(), row["id"]),
            )
            claimed = self._db.execute(
                "SELECT * FROM memory_extract_jobs WHERE id = ?", (row["id"],)
            ).fetchone()
        return self._job(claimed)

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None:
        with self._statement():
            self._db.execute(
                "UPDATE memory_extract_jobs SET status = 'done', outcome = ?, error = NULL, finished_at = ? "
                "WHERE id = ? AND status = 'running'",
                (json.dumps(outcome), now_s(), job_id),
            )

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        with self._statement():
            self._db.execute(
                "UPDATE memory_extract_jobs SET outcome = ? WHERE id = ? AND status = 'running'",
                (json.dumps({"progress": progress}), job_id),
            )

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        with self._statement():
            self._db.execute(
                "UPDATE memory_extract_jobs SET status = ?, error = ?, finished_at = ? WHERE id = ? "
                "AND status = 'running'",
                ("queued" if retry else "failed", error, None if retry else now_s(), job_id),
            )

    def job_may_write(self, job: Job) -> bool:
        """A job found with a revoked device is cancelled here (one queued before the revoke's
        cancel, or by a door older than schema v4)."""
        with self.transaction():
            row = self._db.execute(
                """SELECT j.status, d.revoked_at FROM memory_extract_jobs j
                   LEFT JOIN devices d ON d.id = j.device_id WHERE j.id = ?""",
                (job.id,),
            ).fetchone()
            if row is None or row["status"] != "running":
                return False
            if row["revoked_at"] is not None:
                self._db.execute(
                    """UPDATE memory_extract_jobs SET status = 'cancelled', error = ?, finished_at = ?
                       WHERE id = ?""",
                    (REVOKED_JOB_ERROR, now_s(), job.id),
                )
                return False
        return True

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
    ) -> ExperienceOutcome:
        """Without `created_at` the door's clock stamps the row, and a retry is identical when the
        rest is."""
        with self.transaction():
            existing = self._db.execute(
                "SELECT * FROM experience WHERE team_id = ? AND id = ?", (principal.team_id, entry_id)
            ).fetchone()
            if existing is not None:
                same = same_experience(existing, principal, store, verdict, reason, created_at)
                return "identical" if same else "conflict"
            self._db.execute(
                _INSERT_EXPERIENCE,
                experience_values(principal, entry_id, store, verdict, reason, created_at, now_s()),
            )
        return "inserted"

    def experience_count(self, team_id: int, since: float) -> int:
        with self._lock:
            return int(
                self._db.execute(
                    "SELECT count(*) FROM experience WHERE team_id = ? AND created_at >= ?", (team_id, since)
                ).fetchone()[0]
            )

    def experience_page(
        self, team_id: int, since: float, after: tuple[float, str], limit: int
    ) -> list[dict[str, Any]]:
        with self._lock:
            page = self._db.execute(_EXPERIENCE_PAGE, (team_id, after[0], after[1], since, limit)).fetchall()
        return [dict(row) for row in page]

    # ------------------------------------------------------------------ hook figures

    def put_hook_stats(self, principal: Principal, hours: Sequence[tuple[str, str]]) -> int:
        received = now_s()
        with self.transaction():
            self._db.executemany(_PUT_HOOK_STATS, hook_stats_values(principal, hours, received))
        return len(hours)

    def hook_stats_since(self, team_id: int, since_hour: str) -> list[tuple[str, str, str]]:
        with self._lock:
            rows = self._db.execute(
                """SELECT device_id, hour, counts FROM hook_stats WHERE team_id = ? AND hour >= ?
                   ORDER BY hour, device_id""",
                (team_id, since_hour),
            ).fetchall()
        return [(row[0], row[1], row[2]) for row in rows]

    def prune_hook_stats(self, before_hour: str, limit: int) -> int:
        with self.transaction():
            return self._db.execute(
                """DELETE FROM hook_stats WHERE rowid IN
                   (SELECT rowid FROM hook_stats WHERE hour < ? LIMIT ?)""",
                (before_hour, limit),
            ).rowcount

    # ------------------------------------------------------------------ copying a store (migrate)

    def dump_rows(self, table: str, after: tuple[Any, ...] | None, limit: int) -> list[dict[str, Any]]:
        columns = COPY_COLUMNS[_copied_table(table)]
        key = ", ".join(PRIMARY_KEYS[table])
        where = "" if after is None else f"WHERE ({key}) > ({', '.join('?' * len(after))})"
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(columns)} FROM {table} {where} ORDER BY {key} LIMIT ?",
                (*(after or ()), limit),
            ).fetchall()
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def load_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        """One transaction; a key already present is skipped (ON CONFLICT DO NOTHING on the primary
        key only: a row breaking another constraint fails the whole call)."""
        columns = COPY_COLUMNS[_copied_table(table)]
        statement = (
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT ({', '.join(PRIMARY_KEYS[table])}) DO NOTHING"
        )
        values = [tuple(_stored_value(table, column, row.get(column)) for column in columns) for row in rows]
        with self.transaction():
            if table == "memories":  # a bulk copy: the spaces it fills are rebuilt, not read row by row
                for team_id, tag in {(row["team_id"], row["container_tag"]) for row in rows}:
                    self._changed("space", team_id, tag)
            elif table == "container_aliases":
                for team_id in {row["team_id"] for row in rows}:
                    self._changed("aliases", team_id)
            before = self._db.total_changes
            self._db.executemany(statement, values)
            return self._db.total_changes - before

    def count_rows(self, table: str) -> int:
        """How many rows `table` holds (migrate's progress; not part of the Store protocol)."""
        with self._lock:
            return int(self._db.execute(f"SELECT count(*) FROM {_copied_table(table)}").fetchone()[0])
