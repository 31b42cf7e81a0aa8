"""The SQLite store's ground: its connection, transactions and change notes, the mapping of its
driver's errors to the door's (`door/errors.py`), and what every role part of `SqliteStore` shares."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from bli_memory.door.errors import StoreDamaged, StoreFull, first_line
from bli_memory.door.model import Memory, new_id
from bli_memory.door.store.base import (
    MAX_PENDING_JOBS_PER_DEVICE,
    memory_from_row,
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
MEMORY_COLUMN_NAMES = (
    "rowid id team_id container_tag custom_id content kind status version root_id previous_version_id "
    "pinned metadata person_id device_id created_at updated_at superseded_at"
).split()
MEMORY_COLUMNS = ", ".join(MEMORY_COLUMN_NAMES)
MEMORY_COLUMNS_M = ", ".join(f"m.{name}" for name in MEMORY_COLUMN_NAMES)


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


class SqliteConnection:
    """The file, its one connection and lock, its transactions and change notes, and the mapping of SQLite's
    errors to the door's: what every role part of `SqliteStore` builds on."""

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
                    raise StoreFull(f"{self.path}: database or disk is full", store=self.describe()) from exc
                if is_damage(exc):
                    raise self._damaged(exc) from exc
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

    @contextmanager
    def _read(self) -> Iterator[None]:
        """Reads under the lock; a damaged page met there leaves as StoreDamaged (`_damaged`),
        SQLite's other errors as they are."""
        with self._lock:
            try:
                yield
            except sqlite3.DatabaseError as exc:
                if is_damage(exc):
                    raise self._damaged(exc) from exc
                raise

    def is_damage(self, exc: BaseException) -> bool:
        return isinstance(exc, StoreDamaged) or is_damage(exc)

    def found_damage(self, exc: BaseException) -> bool:
        """SQLite met damage while serving: refuse every later write, as when the background check
        finds it. True the first time (the one error that carries the door's line about it)."""
        if self.integrity.damaged:
            return False
        self.integrity.mark_damaged(str(exc).partition("\n")[0][:200] or type(exc).__name__)
        return True

    def _damaged(self, exc: BaseException) -> StoreDamaged:
        """SQLite met a damaged page while serving: every later write is refused, as when the
        background check finds it. The first such error carries the door's one line about it."""
        found = self.found_damage(exc)
        return StoreDamaged(
            str(exc),
            log_line=f"bli-memory-door: {self.describe()} is damaged ({first_line(exc)}), found by a request: "
            "the door refuses every write from now on (503 store_damaged) and still serves the reads it "
            "can. Stop it and see 'A damaged database' in docs/door-operations.md"
            if found
            else None,
        )

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
        with self._read():
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

    def _memory(self, row: sqlite3.Row) -> Memory:
        columns = row.keys()  # `in row` would look among the values of a sqlite3.Row
        return memory_from_row(row, row["person"] if "person" in columns else None)

    def _current_rows_by_ids(self, select: str, team_id: int, ids: Sequence[str]) -> list[sqlite3.Row]:
        """`select` (over `memories m`) for the current rows of the team among `ids`.

        The one place this filter is written. Lookups by id write `+team_id` / `+status`: the unary
        plus keeps SQLite from choosing an index on those columns (it did, twice: 20-60 ms scans of a
        whole space instead of 100 id probes; tests/door/store/test_sqlite_plans.py)."""
        rows: list[sqlite3.Row] = []
        with self._read():
            for start in range(0, len(ids), IDS_PER_QUERY):
                chunk = ids[start : start + IDS_PER_QUERY]
                marks = ",".join("?" * len(chunk))
                rows += self._db.execute(
                    f"{select} WHERE m.id IN ({marks}) AND +m.team_id = ? AND +m.status = 'current'",
                    (*chunk, team_id),
                ).fetchall()
        return rows
