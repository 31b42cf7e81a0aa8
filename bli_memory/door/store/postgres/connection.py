"""The PostgreSQL store's ground: its connections, transactions and change notes, the mapping of its
driver's errors to the door's (`door/errors.py`), and what every role part of `PostgresStore` shares."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from bli_memory.door.errors import StoreFull, StoreUnavailable, first_line
from bli_memory.door.model import Memory, new_id
from bli_memory.door.store.base import (
    MAX_PENDING_JOBS_PER_DEVICE,
    memory_from_row,
)
from bli_memory.door.store.postgres.schema import migrate, vector_cast, vector_index_name
from bli_memory.door.store.urls import mask_url, scrub

if TYPE_CHECKING:
    import numpy as np

    Connection = psycopg.Connection[dict[str, Any]]


#: connections one door keeps open at most (the HTTP thread pool borrows them per statement).
POOL_MAX_CONNECTIONS = 10
#: how long connecting to the server may take before the attempt fails.
CONNECT_TIMEOUT_S = 5
#: how long a request waits for a free connection (the server down: every wait ends here).
POOL_WAIT_S = 10.0
#: the longest one statement may run (PostgreSQL's `statement_timeout`).
STATEMENT_TIMEOUT_S = 30.0
#: how long a claimed job is a door's before another door may claim it again.
JOB_LEASE_S = 60.0
#: attempts of a job whose lease ran out before it is given up, until the worker says otherwise.
DEFAULT_JOB_MAX_ATTEMPTS = 3
#: how many candidates the HNSW search looks at (pgvector's `hnsw.ef_search`); at least the k asked.
#: Measured at 1 000 000 memories: recall@10 against exact search 0.928 at 200, 0.967 at 400, 0.987
#: at 800, for 10.1 / 16.6 / 38.3 ms per nearest-100 call; 400 is the least that holds 0.95.
HNSW_EF_SEARCH = 400
#: with a write failing for want of disk this recently, `write_problem` says so.
FULL_REMEMBERED_S = 60.0
#: what cancels a job whose device was revoked.
REVOKED_JOB_ERROR = "cancelled: its device was revoked"
#: the advisory lock key under which a vector index is made (one door makes it, the others wait).
VECTOR_INDEX_LOCK_KEY = 7_310_446_201_115_339_522
#: the change log keeps the rows of this many of the newest writing transactions (a door further
#: behind rebuilds every index it holds); older rows are deleted a tenth of it at a time.
CHANGE_LOG_KEEP_COMMITS = 20_000
#: the most changed memories one `changes_elsewhere` reads one by one (its answer stays bounded);
#: past it, the spaces they are in are rebuilt instead.
CHANGE_LOG_MAX_ROWS = 10_000
#: what a row of the change log names: one memory, a whole space, a whole team, a team's aliases.
ChangeKind = Literal["memory", "space", "team", "aliases"]
Change = tuple[ChangeKind, int, str | None, str | None]

MEMORY_COLUMNS = (
    "seq, id, team_id, container_tag, custom_id, content, kind, status, version, root_id, previous_version_id, "
    "pinned, metadata, person_id, device_id, created_at, updated_at, superseded_at"
)
MEMORY_COLUMNS_M = ", ".join(f"m.{name.strip()}" for name in MEMORY_COLUMNS.split(","))


def server_version(number: int) -> str:
    """PostgreSQL's `server_version_num` as people write it (160002 -> "16.2")."""
    major, minor = divmod(number, 10000)
    return f"{major}.{minor}" if major >= 10 else f"{major // 100}.{major % 100}.{minor}"


class PostgresConnection:
    """The pool, its transactions (a connection per thread) and change notes, and the mapping of psycopg's
    errors to the door's: what every role part of `PostgresStore` builds on."""

    def __init__(
        self,
        url: str,
        *,
        max_pending_jobs: int = MAX_PENDING_JOBS_PER_DEVICE,
        max_connections: int = POOL_MAX_CONNECTIONS,
        statement_timeout_s: float = STATEMENT_TIMEOUT_S,
        pool_wait_s: float = POOL_WAIT_S,
        job_lease_s: float = JOB_LEASE_S,
        change_log_keep_commits: int = CHANGE_LOG_KEEP_COMMITS,
        change_log_max_rows: int = CHANGE_LOG_MAX_ROWS,
    ) -> None:
        """Connect, migrate the schema (under an advisory lock) and open the pool. Raises
        StoreUnavailable when the server cannot be reached, SchemaTooNew for a newer door's
        database."""
        self.url = url
        self.masked_url = mask_url(url)
        self.max_pending_jobs = max_pending_jobs
        self.statement_timeout_s = statement_timeout_s
        self.pool_wait_s = pool_wait_s
        self.job_lease_s = job_lease_s
        self.job_max_attempts = DEFAULT_JOB_MAX_ATTEMPTS
        self.change_log_keep_commits = max(1, change_log_keep_commits)
        self.change_log_max_rows = max(1, change_log_max_rows)
        #: this store's name on the jobs it claims (a restarted door is another claimer).
        self.owner = new_id("door")
        self._local = threading.local()
        self._seen_lock = threading.Lock()
        self._reading_changes = threading.Lock()
        self._seen: int | None = None
        self._identity: str | None = None
        self._own: set[int] = set()
        self._vector_indexes: set[str] = set()
        self._full_at = -FULL_REMEMBERED_S
        self._closed = threading.Event()
        self._checking = threading.Lock()
        self._renewer: threading.Thread | None = None
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
                migrate(conn)
                self.version = server_version(conn.info.server_version)
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(self._scrub(exc)) from None
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": CONNECT_TIMEOUT_S},
            min_size=1,
            max_size=max_connections,
            timeout=pool_wait_s,
            configure=self._configure,
            name="bli-memory",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=pool_wait_s)
        except PoolTimeout:
            self._pool.close()
            raise StoreUnavailable(f"no connection to PostgreSQL within {pool_wait_s:g} s") from None

    def _configure(self, conn: Connection) -> None:
        """Every new connection: the statement deadline, the HNSW breadth and the vector type."""
        from pgvector.psycopg import register_vector

        conn.execute(f"SET statement_timeout = {int(self.statement_timeout_s * 1000)}")
        conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}")
        register_vector(conn)

    def describe(self) -> str:
        return f"postgresql {self.version} {self.masked_url}"

    def close(self) -> None:
        self._closed.set()
        self._pool.close()

    def _scrub(self, exc: BaseException) -> str:
        """The first line of an error, never with the password in it (as written in the URL or
        percent-decoded: libpq quotes either)."""
        return scrub(first_line(exc), self.url)

    def _map_error(self, exc: BaseException) -> Exception | None:
        """The store exception `exc` means (StoreFull, StoreUnavailable), or None to raise it as it is."""
        if isinstance(exc, PoolTimeout):
            return StoreUnavailable(
                f"no connection to PostgreSQL within {self.pool_wait_s:g} s (the server is down or every connection is busy)",
                store=self.describe(),
            )
        if isinstance(exc, psycopg.errors.DiskFull):
            self._full_at = time.monotonic()
            return StoreFull(
                f"{self.masked_url}: could not extend a file: no space left on the server's disk",
                store=self.describe(),
            )
        if isinstance(exc, psycopg.errors.QueryCanceled):
            return StoreUnavailable(
                f"a statement ran past PostgreSQL's statement_timeout ({self.statement_timeout_s:g} s)",
                store=self.describe(),
            )
        if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
            self._check_pool()
            return StoreUnavailable(
                f"lost the connection to PostgreSQL ({self._scrub(exc)})", store=self.describe()
            )
        return None

    def _check_pool(self) -> None:
        """Drop the pool's dead idle connections (a restart killed them all), in the background;
        one check at a time, however many requests failed at once."""
        if not self._checking.acquire(blocking=False):
            return

        def check() -> None:
            try:
                with contextlib.suppress(Exception):  # the server is still down: the next request says so
                    self._pool.check()
            finally:
                self._checking.release()

        threading.Thread(target=check, name="bli-memory-pool-check", daemon=True).start()

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """This thread's transaction's connection, or one borrowed from the pool for a read."""
        held: Connection | None = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        try:
            with self._pool.connection() as conn:
                yield conn
        except Exception as exc:
            mapped = self._map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction on one connection; nested calls join it through a savepoint."""
        held: Connection | None = getattr(self._local, "conn", None)
        if held is not None:
            with held.transaction():
                yield
            return
        bumped: int | None = None
        try:
            with self._pool.connection() as conn:
                self._local.conn = conn
                changes: list[Change] = []
                self._local.changes = changes
                try:
                    with conn.transaction():
                        yield
                        if changes:
                            bumped = self._log_changes(conn, changes)
                finally:
                    self._local.conn = None
                    self._local.changes = None
        except Exception as exc:
            mapped = self._map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        if bumped is not None:
            with self._seen_lock:
                self._own.add(bumped)

    def _changed(
        self, kind: ChangeKind, team_id: int, tag: str | None = None, memory_id: str | None = None
    ) -> None:
        """Note a change other doors' indexes must learn of (call inside `transaction()`)."""
        self._local.changes.append((kind, int(team_id), tag, memory_id))

    def _log_changes(self, conn: Connection, changes: Sequence[Change]) -> int | None:
        """Bump the counter and log `changes` under its new value, at the end of the transaction
        (the counter's row stays locked until the commit: writers commit in counter order); prune
        the log past CHANGE_LOG_KEEP_COMMITS. The value taken."""
        row = conn.execute(
            "UPDATE bli_changes SET counter = counter + 1 WHERE id = 1 RETURNING counter, pruned_through"
        ).fetchone()
        if row is None:
            return None
        counter = int(row["counter"])
        kinds, teams, tags, ids = (list(column) for column in zip(*dict.fromkeys(changes), strict=True))
        conn.execute(
            """INSERT INTO bli_change_log (counter, kind, team_id, container_tag, memory_id)
               SELECT %s, kind, team_id, tag, memory_id
               FROM unnest(%s::text[], %s::bigint[], %s::text[], %s::text[]) AS c(kind, team_id, tag, memory_id)""",
            (counter, kinds, teams, tags, ids),
        )
        keep = self.change_log_keep_commits
        if counter - int(row["pruned_through"]) > keep + max(1, keep // 10):
            through = counter - keep
            conn.execute("DELETE FROM bli_change_log WHERE counter <= %s", (through,))
            conn.execute("UPDATE bli_changes SET pruned_through = %s WHERE id = 1", (through,))
        return counter

    def is_damage(self, exc: BaseException) -> bool:
        """PostgreSQL's own verdict of damaged data or index (`XX001`, `XX002`)."""
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        return isinstance(cause, (psycopg.errors.DataCorrupted, psycopg.errors.IndexCorrupted))

    def write_problem(self) -> str | None:
        """A disk found full in the last minute, or None; raises StoreUnavailable when the server is
        out of reach (one tiny query)."""
        if time.monotonic() - self._full_at < FULL_REMEMBERED_S:
            return f"the disk of the PostgreSQL server at {self.masked_url} was full within the last minute"
        with self._connection() as conn:
            conn.execute("SELECT 1")
        return None

    def schema_version(self) -> int:
        with self._connection() as conn:
            row = conn.execute("SELECT max(version) AS version FROM bli_schema").fetchone()
        return int(row["version"]) if row and row["version"] is not None else 0

    @staticmethod
    def _memory(row: dict[str, Any]) -> Memory:
        return memory_from_row(row, row.get("person"))

    def _memories(self, query: str, params: Sequence[Any] | dict[str, Any]) -> list[Memory]:
        with self._connection() as db:
            rows = db.execute(query, params).fetchall()
        return [self._memory(row) for row in rows]

    def _one(self, query: str, params: Sequence[Any]) -> Memory | None:
        found = self._memories(query, params)
        return found[0] if found else None

    def _ensure_vector_index(self, model: str, dim: int) -> None:
        """Make the HNSW index of one model's vectors if it is not there (once per door and model):
        before the first vector of a model is written, so that the index grows with the rows."""
        name = vector_index_name(model, dim)
        if name in self._vector_indexes:
            return
        with self._connection() as db:  # CREATE INDEX IF NOT EXISTS would lock the table even so
            there = db.execute(
                "SELECT 1 FROM pg_class WHERE relname = %s AND relkind = 'i'", (name,)
            ).fetchone()
        if there is not None:
            self._vector_indexes.add(name)
            return
        with self.transaction(), self._connection() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (VECTOR_INDEX_LOCK_KEY,))
            db.execute("SET LOCAL statement_timeout = 0")  # a large table takes minutes, once
            db.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {} ON memories USING hnsw ({} vector_cosine_ops) "
                    "WHERE embedding_model = {} AND status = 'current'"
                ).format(sql.Identifier(name), sql.SQL(vector_cast(dim)), sql.Literal(model))
            )
        self._vector_indexes.add(name)


def vector_array(vector: Any) -> np.ndarray:
    """A pgvector value as float32 numpy (the adapter gives a `Vector` or an array by format)."""
    import numpy as np

    value = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
    return np.asarray(value, dtype=np.float32)
