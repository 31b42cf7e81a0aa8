"""The shared store: one PostgreSQL database with pgvector, which several doors may serve at once.

Strategy:
- The tables are the SQLite store's (`schema.py`), so rows copy between the two as they are.
- One connection pool per store (psycopg-pool): a connect timeout, a wait for a free connection,
  and a `statement_timeout` on every connection. A transaction holds one connection for its thread
  (`transaction()`); a read outside one borrows a connection for that statement. Nested
  transactions are savepoints.
- A lost connection, a server restart or a deadline is `StoreUnavailable` (the door answers 503);
  the pool then checks its idle connections, drops the dead ones and connects anew, so the next
  request works without restarting the door. A full disk (`53100`) is `StoreFull`.
- Vectors are pgvector columns; `nearest` answers from one HNSW index (cosine) per model, made on
  first use. Keyword search stays the memory service's.
- Doors learn of each other's writes through a change log. Every transaction writing memories or
  aliases bumps one counter (`bli_changes`) at its end and writes, under the value it took, what
  it changed (`bli_change_log`: a memory, a whole space, a whole team, a team's aliases). The
  counter's row lock is held from the bump to the commit, so the values commit in their order:
  once a door has read counter value N, every row of every value up to N is there to read.
  `changes_elsewhere` reads the counter (one tiny query) and, when other doors moved it, the rows
  past this store's position but its own, and the changed memories of the spaces the door holds
  as they are now: the door updates those indexes in place instead of rebuilding them. More rows
  than CHANGE_LOG_MAX_ROWS become the spaces they touch (rebuilt); a position older than the
  pruned rows (the log keeps the newest CHANGE_LOG_KEEP_COMMITS transactions) or a counter value
  without rows (a door of an older version writing) becomes "everything". `changes_since` reads
  the same from any given position without moving this store's: a door that starts from an index
  snapshot replays the log from the counter value its stamp holds (`index_identity` names the
  database in that stamp; `door/indexes.py`).
- Extraction jobs are claimed with `FOR UPDATE SKIP LOCKED` under a lease (`claimed_by`,
  `lease_until` on the server's clock) that a thread renews while the door holds jobs: a door killed
  mid-job loses nothing, its lease runs out and any door claims the job again.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from bli_memory.door.errors import first_line
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
    StoreFull,
    StoreUnavailable,
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
from bli_memory.door.store.postgres.schema import SCHEMA_VERSION, migrate, vector_cast, vector_index_name
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
EXPIRED_JOB_ERROR = "interrupted (its door stopped or lost its lease) at each of its attempts"
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

_MEMORY_COLUMNS = (
    "seq, id, team_id, container_tag, custom_id, content, kind, status, version, root_id, previous_version_id, "
    "pinned, metadata, person_id, device_id, created_at, updated_at, superseded_at"
)
_MEMORY_COLUMNS_M = ", ".join(f"m.{name.strip()}" for name in _MEMORY_COLUMNS.split(","))
#: the last change of the team's current memories among some ids; `team_id + 0` and `status || ''`
#: leave the id index as the only one that can answer (see `current_by_ids`).
UPDATED_AT_BY_IDS_SQL = (
    "SELECT id, updated_at FROM memories WHERE id = ANY(%s) AND team_id + 0 = %s AND status || '' = 'current'"
)
_NOW = "extract(epoch from clock_timestamp())"

#: tables whose ids PostgreSQL numbers itself: after rows with their own ids, numbering goes on past them.
_IDENTITY_COLUMNS = {"teams": "id", "people": "id", "memories": "seq"}

_AUTHENTICATE = in_dialect(AUTHENTICATE_SQL, "%s")
_PRINCIPAL_FOR_JOB = in_dialect(PRINCIPAL_FOR_JOB_SQL, "%s")
_ENQUEUE_JOB = in_dialect(ENQUEUE_JOB_SQL, "%s")
_FAIR_JOB_ORDER = in_dialect(FAIR_JOB_ORDER_SQL, "%s")
_PUT_HOOK_STATS = in_dialect(PUT_HOOK_STATS_SQL, "%s")
#: a retry of an opinion already stored inserts nothing; record_experience then compares the two
_INSERT_EXPERIENCE = in_dialect(INSERT_EXPERIENCE_SQL, "%s") + " ON CONFLICT (team_id, id) DO NOTHING"
_EXPERIENCE_PAGE = in_dialect(EXPERIENCE_PAGE_SQL, "%s")


def _column(name: str) -> str:
    """A copied column's name here: the SQLite names of `COPY_COLUMNS`, but `rowid` is `seq`."""
    return "seq" if name == "rowid" else name


def server_version(number: int) -> str:
    """PostgreSQL's `server_version_num` as people write it (160002 -> "16.2")."""
    major, minor = divmod(number, 10000)
    return f"{major}.{minor}" if major >= 10 else f"{major // 100}.{major % 100}.{minor}"


class PostgresStore:
    """The door's rows in one PostgreSQL database. Thread-safe; every write method is one transaction."""

    name = "postgresql"
    #: the schema version this code writes (a database is brought to it when opened).
    SCHEMA_VERSION = SCHEMA_VERSION

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

    # ------------------------------------------------------------------ plumbing

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
                f"no connection to PostgreSQL within {self.pool_wait_s:g} s (the server is down or every connection is busy)"
            )
        if isinstance(exc, psycopg.errors.DiskFull):
            self._full_at = time.monotonic()
            return StoreFull(
                f"{self.masked_url}: could not extend a file: no space left on the server's disk"
            )
        if isinstance(exc, psycopg.errors.QueryCanceled):
            return StoreUnavailable(
                f"a statement ran past PostgreSQL's statement_timeout ({self.statement_timeout_s:g} s)"
            )
        if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
            self._check_pool()
            return StoreUnavailable(f"lost the connection to PostgreSQL ({self._scrub(exc)})")
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

    def changed_elsewhere(self) -> bool:
        """Whether the change counter moved by other than this store's own commits since the last call."""
        return self.changes_elsewhere(()).seen

    def changes_elsewhere(self, held: Collection[SpaceKey]) -> OutsideChanges:
        """What other doors committed since the last call, this store's own commits left out (see the
        module docstring): one query when nothing changed, three when something did."""
        with self._reading_changes:  # one reader at a time moves the position
            with self._connection() as conn:
                row = conn.execute("SELECT counter, pruned_through FROM bli_changes WHERE id = 1").fetchone()
            counter = int(row["counter"]) if row else 0
            with self._seen_lock:
                seen, self._seen = self._seen, counter
                own = self._own
                self._own = {value for value in own if value > counter}
            if seen is None or counter == seen:
                return OutsideChanges()
            if counter < seen:  # another database behind the same name
                return OutsideChanges(everything=True, seen=True)
            mine = sorted(value for value in own if seen < value <= counter)
            foreign = counter - seen - len(mine)
            if foreign == 0:
                return OutsideChanges()
            if row is not None and int(row["pruned_through"]) > seen:
                return OutsideChanges(everything=True, seen=True)
            return self._read_changes(seen, counter, mine, foreign, held)

    def unstamped_snapshot_position(self) -> int | None:
        """None: every snapshot this store's doors wrote is stamped with its database and position."""
        return None

    def index_identity(self) -> str:
        """Which database this is, for index snapshots kept outside it: the cluster's system
        identifier (when this role may read it: `pg_control_system()`), the database's oid (a
        database dropped and made again under its name gets another) and its name."""
        if self._identity is None:
            with self._connection() as conn:
                row = conn.execute(
                    """SELECT oid::text AS oid, datname,
                              has_function_privilege('pg_control_system()', 'EXECUTE') AS control
                       FROM pg_database WHERE datname = current_database()"""
                ).fetchone()
                assert row is not None
                system = ""
                if row["control"]:
                    control = conn.execute(
                        "SELECT system_identifier::text AS id FROM pg_control_system()"
                    ).fetchone()
                    system = control["id"] if control else ""
            self._identity = f"postgresql:{system}:{row['oid']}:{row['datname']}"
        return self._identity

    def change_position(self) -> int | None:
        with self._seen_lock:
            return self._seen

    def changes_since(self, position: int, held: Collection[SpaceKey]) -> OutsideChanges:
        """Every change committed after counter value `position` (this store's own included, which
        an index holding them takes as no-ops), read as `changes_elsewhere` reads them; this
        store's position stays where it is."""
        with self._connection() as conn:
            row = conn.execute("SELECT counter, pruned_through FROM bli_changes WHERE id = 1").fetchone()
        counter = int(row["counter"]) if row else 0
        if counter == position:
            return OutsideChanges()
        if row is None or counter < position or int(row["pruned_through"]) > position:
            return OutsideChanges(everything=True, seen=True)
        return self._read_changes(position, counter, [], counter - position, held)

    def _read_changes(
        self, seen: int, counter: int, mine: list[int], foreign: int, held: Collection[SpaceKey]
    ) -> OutsideChanges:
        """The log rows of the `foreign` transactions in (seen, counter] but `mine`, and the changed
        memories of `held` spaces as they are now."""
        window = "counter > %(seen)s AND counter <= %(counter)s AND NOT counter = ANY(%(mine)s::bigint[])"
        params: dict[str, Any] = {"seen": seen, "counter": counter, "mine": mine}
        with self._connection() as conn:
            rows = conn.execute(
                f"""SELECT counter, kind, team_id, container_tag, memory_id FROM bli_change_log
                    WHERE {window} ORDER BY counter LIMIT %(limit)s""",
                params | {"limit": self.change_log_max_rows + 1},
            ).fetchall()
            if len(rows) > self.change_log_max_rows:  # too many to read one by one: whole spaces
                logged_row = conn.execute(
                    f"SELECT count(DISTINCT counter) AS n FROM bli_change_log WHERE {window}", params
                ).fetchone()
                logged = int(logged_row["n"]) if logged_row else 0
                rows = conn.execute(
                    f"""SELECT DISTINCT CASE kind WHEN 'memory' THEN 'space' ELSE kind END AS kind, team_id,
                            container_tag, NULL AS memory_id FROM bli_change_log WHERE {window}""",
                    params,
                ).fetchall()
            else:
                logged = len({row["counter"] for row in rows})
        if logged < foreign:  # pruned meanwhile, or written by a door that keeps no log
            return OutsideChanges(everything=True, seen=True)
        return outside_changes(
            ((row["kind"], row["team_id"], row["container_tag"], row["memory_id"]) for row in rows),
            held,
            self._index_state,
        )

    def _index_state(
        self, wanted: dict[str, SpaceKey]
    ) -> tuple[dict[SpaceKey, list[IndexRow]], dict[SpaceKey, list[str]]]:
        """Per space, the `wanted` memories an index holds now (in save order) and those it must not."""
        if not wanted:
            return {}, {}
        with self._connection() as conn:
            rows = conn.execute(
                """SELECT id, content, device_id, updated_at FROM memories WHERE id = ANY(%s)
                   AND status = 'current' AND pinned = 0 ORDER BY seq""",
                (list(wanted),),
            ).fetchall()
        return split_index_state(
            wanted, (IndexRow(row["id"], row["content"], row["device_id"], row["updated_at"]) for row in rows)
        )

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

    # ------------------------------------------------------------------ teams, people, devices

    def create_device(
        self, *, person: str, team: str = "local", admin: bool = False, label: str | None = None
    ) -> tuple[str, str]:
        token = new_token()
        device_id = new_id("dev")
        now = now_s()
        with self.transaction(), self._connection() as db:
            db.execute(
                "INSERT INTO teams (name, created_at) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                (team, now),
            )
            team_row = db.execute("SELECT id FROM teams WHERE name = %s", (team,)).fetchone()
            assert team_row is not None
            db.execute(
                "INSERT INTO people (team_id, name, created_at) VALUES (%s, %s, %s) ON CONFLICT (team_id, name) DO NOTHING",
                (team_row["id"], person, now),
            )
            person_row = db.execute(
                "SELECT id FROM people WHERE team_id = %s AND name = %s", (team_row["id"], person)
            ).fetchone()
            assert person_row is not None
            db.execute(
                """INSERT INTO devices (id, person_id, token_hash, label, admin, created_at)
                   VALUES (%s, %s, %s, %s, %s, %s)""",
                (device_id, person_row["id"], hash_text(token), label, int(admin), now),
            )
        return device_id, token

    def authenticate(self, token: str) -> Principal | None:
        with self._connection() as db:
            row = db.execute(_AUTHENTICATE, (hash_text(token),)).fetchone()
        return None if row is None else principal_from_row(row)

    def list_devices(self) -> list[dict[str, Any]]:
        with self._connection() as db:
            rows = db.execute(LIST_DEVICES_SQL).fetchall()
        return [dict(row) for row in rows]

    def revoke_device(self, device_id: str) -> int | None:
        now = now_s()
        with self.transaction(), self._connection() as db:
            cursor = db.execute(
                "UPDATE devices SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL", (now, device_id)
            )
            if cursor.rowcount != 1:
                return None
            cancelled = db.execute(
                """UPDATE memory_extract_jobs SET status = 'cancelled', error = %s, finished_at = %s
                   WHERE device_id = %s AND status IN ('queued', 'running')""",
                (REVOKED_JOB_ERROR, now, device_id),
            )
            return cancelled.rowcount

    def set_device_admin(self, device_id: str, admin: bool) -> bool:
        with self.transaction(), self._connection() as db:
            cursor = db.execute(
                "UPDATE devices SET admin = %s WHERE id = %s AND revoked_at IS NULL", (int(admin), device_id)
            )
            return cursor.rowcount == 1

    def principal_for_job(self, job: Job) -> Principal:
        with self._connection() as db:
            row = db.execute(_PRINCIPAL_FOR_JOB, (job.device_id, job.person_id)).fetchone()
        return job_principal_from_row(job, row)

    # ------------------------------------------------------------------ aliases

    def canonical_tag(self, team_id: int, tag: str) -> str:
        with self._connection() as db:
            row = db.execute(
                "SELECT canonical FROM container_aliases WHERE team_id = %s AND alias = %s", (team_id, tag)
            ).fetchone()
        return tag if row is None else str(row["canonical"])

    def aliases_of(self, team_id: int, canonical: str) -> list[str]:
        with self._connection() as db:
            rows = db.execute(
                "SELECT alias FROM container_aliases WHERE team_id = %s AND canonical = %s ORDER BY alias",
                (team_id, canonical),
            ).fetchall()
        return [str(row["alias"]) for row in rows]

    def put_alias(self, team_id: int, alias: str, canonical: str) -> None:
        with self.transaction(), self._connection() as db:
            self._changed("aliases", team_id)
            db.execute(
                """INSERT INTO container_aliases (team_id, alias, canonical, created_at) VALUES (%s, %s, %s, %s)
                   ON CONFLICT (team_id, alias) DO UPDATE SET canonical = excluded.canonical""",
                (team_id, alias, canonical, now_s()),
            )
            # Tags that pointed at the new alias now point at its canonical: no chains.
            db.execute(
                "UPDATE container_aliases SET canonical = %s WHERE team_id = %s AND canonical = %s",
                (canonical, team_id, alias),
            )

    # ------------------------------------------------------------------ memories: reading

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

    def get(self, team_id: int, memory_id: str) -> Memory | None:
        return self._one(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = %s AND team_id = %s", (memory_id, team_id)
        )

    def versions(self, team_id: int, root_id: str) -> list[Memory]:
        return self._memories(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE root_id = %s AND team_id = %s ORDER BY version, created_at, seq",
            (root_id, team_id),
        )

    def current_version(self, team_id: int, root_id: str) -> Memory | None:
        return self._one(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE root_id = %s AND team_id = %s AND status = 'current'",
            (root_id, team_id),
        )

    def current_by_custom_id(self, team_id: int, tags: Sequence[str], custom_id: str) -> Memory | None:
        return self._one(
            f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = %s AND status = 'current' AND pinned = 0
                AND container_tag = ANY(%s) AND custom_id = %s ORDER BY updated_at DESC, seq DESC LIMIT 1""",
            (team_id, list(tags), custom_id),
        )

    def current_by_hash(self, team_id: int, tags: Sequence[str], content_hash: str) -> Memory | None:
        return self._one(
            f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = %s AND status = 'current' AND pinned = 0
                AND container_tag = ANY(%s) AND content_hash = %s ORDER BY updated_at DESC, seq DESC LIMIT 1""",
            (team_id, list(tags), content_hash),
        )

    # Lookups by id write `team_id + 0` and `status || ''`: only the id index can answer them then. Right
    # after a bulk load (a migrate, an import), before PostgreSQL has statistics on the new rows, the
    # planner chose the team index and read every row of the team per search (9.5 ms instead of
    # 0.14 ms at 10 000 rows; a full pass at 1 000 000).

    def current_by_ids(self, team_id: int, ids: Sequence[str]) -> dict[str, Memory]:
        found = self._memories(
            f"""SELECT {_MEMORY_COLUMNS_M}, p.name AS person FROM memories m LEFT JOIN people p ON p.id = m.person_id
                WHERE m.id = ANY(%s) AND m.team_id + 0 = %s AND m.status || '' = 'current'""",
            (list(ids), team_id),
        )
        return {memory.id: memory for memory in found}

    def updated_at(self, team_id: int, ids: Sequence[str]) -> dict[str, float]:
        with self._connection() as db:
            rows = db.execute(
                UPDATED_AT_BY_IDS_SQL,
                (list(ids), team_id),
            ).fetchall()
        return {row["id"]: row["updated_at"] for row in rows}

    def count_current(self, team_id: int, tags: Sequence[str]) -> int:
        with self._connection() as db:
            row = db.execute(
                """SELECT count(*) AS n FROM memories WHERE team_id = %s AND status = 'current'
                   AND pinned = 0 AND container_tag = ANY(%s)""",
                (team_id, list(tags)),
            ).fetchone()
        return int(row["n"]) if row else 0

    def pinned(self, team_id: int, tags: Sequence[str]) -> list[Memory]:
        return self._memories(
            f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = %s AND status = 'current' AND pinned = 1
                AND container_tag = ANY(%s) ORDER BY created_at, seq""",
            (team_id, list(tags)),
        )

    def recent(self, team_id: int, tags: Sequence[str], limit: int) -> list[Memory]:
        return self._memories(
            f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = %s AND status = 'current' AND pinned = 0
                AND container_tag = ANY(%s) ORDER BY updated_at DESC, seq DESC LIMIT %s""",
            (team_id, list(tags), limit),
        )

    def index_rows(self, team_id: int, tag: str) -> Iterable[IndexRow]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT id, content, device_id, updated_at FROM memories WHERE team_id = %s
                   AND container_tag = %s AND status = 'current' AND pinned = 0 ORDER BY seq""",
                (team_id, tag),
            ).fetchall()
        return [IndexRow(row["id"], row["content"], row["device_id"], row["updated_at"]) for row in rows]

    def spaces(self, limit: int, team_id: int | None = None) -> list[tuple[int, str]]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT team_id, container_tag FROM memories WHERE status = 'current'
                   AND (%s::bigint IS NULL OR team_id = %s)
                   GROUP BY team_id, container_tag ORDER BY max(updated_at) DESC, team_id, container_tag LIMIT %s""",
                (team_id, team_id, limit),
            ).fetchall()
        return [(int(row["team_id"]), str(row["container_tag"])) for row in rows]

    def page_current(
        self, team_id: int, tags: Sequence[str], limit: int, before: tuple[float, str] | None
    ) -> list[BrowseRow]:
        """One statement (one snapshot): per tag, a walk of the space index from the cursor, merged."""
        after_cursor = "" if before is None else "AND (m.updated_at, m.id) < (%(at)s, %(id)s)"
        params: dict[str, Any] = {"team": team_id, "tags": list(dict.fromkeys(tags)), "limit": limit}
        if before is not None:
            params |= {"at": float(before[0]), "id": before[1]}
        with self._connection() as db:
            rows = db.execute(
                f"""SELECT page.*, p.name AS person FROM unnest(%(tags)s::text[]) AS wanted(tag)
                    CROSS JOIN LATERAL (
                        SELECT {_MEMORY_COLUMNS_M} FROM memories m
                        WHERE m.team_id = %(team)s AND m.container_tag = wanted.tag AND m.status = 'current'
                        AND m.pinned = 0 {after_cursor}
                        ORDER BY m.updated_at DESC, m.id DESC LIMIT %(limit)s
                    ) AS page
                    LEFT JOIN people p ON p.id = page.person_id
                    ORDER BY page.updated_at DESC, page.id DESC LIMIT %(limit)s""",
                params,
            ).fetchall()
        return [BrowseRow(self._memory(row), row["device_id"]) for row in rows]

    def team_named(self, team: str) -> int | None:
        with self._connection() as db:
            row = db.execute("SELECT id FROM teams WHERE name = %s", (team,)).fetchone()
        return None if row is None else int(row["id"])

    def purge(self, team_id: int, tags: Sequence[str] | None, *, dry_run: bool = False) -> PurgeCount:
        """One transaction; the memory rows are counted as they are deleted, under their row locks."""
        where = "team_id = %s" if tags is None else "team_id = %s AND container_tag = ANY(%s)"
        params: tuple[Any, ...] = (team_id,) if tags is None else (team_id, list(tags))
        with self.transaction(), self._connection() as db:
            if dry_run:
                counted = db.execute(
                    f"""SELECT count(*) AS memories, count(*) FILTER (WHERE status = 'current') AS current
                        FROM memories WHERE {where}""",
                    params,
                ).fetchone()
                jobs = db.execute(
                    f"SELECT count(*) AS n FROM memory_extract_jobs WHERE {where}", params
                ).fetchone()
            else:
                if tags is None:
                    self._changed("team", team_id)
                for tag in tags or ():
                    self._changed("space", team_id, tag)
                counted = db.execute(
                    f"""WITH gone AS (DELETE FROM memories WHERE {where} RETURNING status)
                        SELECT count(*) AS memories, count(*) FILTER (WHERE status = 'current') AS current
                        FROM gone""",
                    params,
                ).fetchone()
                jobs = db.execute(
                    f"WITH gone AS (DELETE FROM memory_extract_jobs WHERE {where} RETURNING 1) "
                    "SELECT count(*) AS n FROM gone",
                    params,
                ).fetchone()
        assert counted is not None and jobs is not None
        return PurgeCount(
            memories=int(counted["memories"]), current=int(counted["current"]), jobs=int(jobs["n"])
        )

    # ------------------------------------------------------------------ memories: writing

    def insert_version(self, row: NewVersion) -> str:
        memory_id = new_id("mem")
        if row.vector is not None and row.vector_model is not None:
            self._ensure_vector_index(row.vector_model, int(row.vector.shape[0]))
        with self.transaction(), self._connection() as db:
            self._changed("memory", row.team_id, row.container_tag, memory_id)
            db.execute(
                """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                       status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                       created_at, updated_at, embedding, embedding_model)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, 'current', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
                version_values(memory_id, row, None if row.vector is None else row.vector.astype("float32")),
            )
        return memory_id

    def retire(self, memory_id: str, status: Literal["superseded", "forgotten"]) -> bool:
        with self.transaction(), self._connection() as db:
            retired = db.execute(
                """UPDATE memories SET status = %s, superseded_at = %s WHERE id = %s AND status = 'current'
                   RETURNING team_id, container_tag""",
                (status, now_s(), memory_id),
            ).fetchone()
            if retired is None:
                return False
            self._changed("memory", retired["team_id"], retired["container_tag"], memory_id)
            return True

    # ------------------------------------------------------------------ export and import (whole history)

    def rows_page(
        self, team_id: int, tags: Sequence[str] | None, after: str | None, limit: int, *, own_global: str
    ) -> list[Memory]:
        """By `seq` (save order): the rows after the one named `after`, found within the team."""
        in_tags = (
            "AND " + in_dialect(SHARED_OR_OWN_GLOBAL_SQL, "%(own_global)s")
            if tags is None
            else "AND container_tag = ANY(%(tags)s)"
        )
        start = (
            "0" if after is None else "(SELECT seq FROM memories WHERE id = %(after)s AND team_id = %(team)s)"
        )
        params = {
            "team": team_id,
            "tags": None if tags is None else list(tags),
            "own_global": own_global,
            "after": after,
            "limit": limit,
        }
        # an unknown `after` makes the start NULL, and `seq > NULL` holds for no row: []
        return self._memories(
            f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE team_id = %(team)s AND seq > {start} {in_tags}
                ORDER BY seq LIMIT %(limit)s""",
            params,
        )

    def insert_imported(self, row: ImportedVersion) -> bool:
        if row.vector is not None and row.vector_model is not None:
            self._ensure_vector_index(row.vector_model, int(row.vector.shape[0]))
        with self.transaction(), self._connection() as db:
            cursor = db.execute(
                """INSERT INTO memories (id, team_id, container_tag, custom_id, content, content_hash, kind,
                       status, version, root_id, previous_version_id, pinned, metadata, person_id, device_id,
                       created_at, updated_at, superseded_at, embedding, embedding_model)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (id) DO NOTHING""",
                imported_values(row, None if row.vector is None else row.vector.astype("float32")),
            )
            if cursor.rowcount != 1:
                return False
            self._changed("memory", row.team_id, row.container_tag, row.id)
        return True

    def expired_documents(self, key_prefix: str, before: float, limit: int) -> list[tuple[int, Memory]]:
        with self._connection() as db:
            rows = db.execute(
                f"""SELECT {_MEMORY_COLUMNS} FROM memories WHERE kind = 'document' AND status = 'current'
                    AND created_at < %s AND custom_id >= %s AND custom_id < %s ORDER BY created_at, seq LIMIT %s""",
                (before, key_prefix, key_prefix + "\U0010ffff", limit),
            ).fetchall()
        return [(int(row["team_id"]), self._memory(row)) for row in rows]

    # ------------------------------------------------------------------ vectors

    def vectors_missing(self, model: str, limit: int) -> list[VectorTask]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT id, team_id, container_tag, content, content_hash FROM memories
                   WHERE status = 'current' AND pinned = 0 AND (embedding_model IS NULL OR embedding_model <> %s)
                   ORDER BY seq LIMIT %s""",
                (model, limit),
            ).fetchall()
        return [
            VectorTask(
                row["id"], int(row["team_id"]), row["container_tag"], row["content"], row["content_hash"]
            )
            for row in rows
        ]

    def set_vector(self, memory_id: str, content_hash: str, model: str, vector: np.ndarray) -> bool:
        self._ensure_vector_index(model, int(vector.shape[0]))
        with self.transaction(), self._connection() as db:
            changed = db.execute(
                """UPDATE memories SET embedding = %s, embedding_model = %s
                   WHERE id = %s AND status = 'current' AND content_hash = %s RETURNING team_id, container_tag""",
                (vector.astype("float32"), model, memory_id, content_hash),
            ).fetchone()
            if changed is None:
                return False
            self._changed("memory", changed["team_id"], changed["container_tag"], memory_id)
            return True

    def current_vectors(self, team_id: int, tag: str, model: str) -> Iterator[tuple[str, np.ndarray]]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT id, embedding FROM memories WHERE team_id = %s AND container_tag = %s
                   AND status = 'current' AND pinned = 0 AND embedding IS NOT NULL AND embedding_model = %s
                   ORDER BY seq""",
                (team_id, tag, model),
            ).fetchall()
        for row in rows:
            yield row["id"], _array(row["embedding"])

    def vectors_of(self, team_id: int, ids: Sequence[str], model: str) -> dict[str, np.ndarray]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        with self._connection() as db:
            rows = db.execute(
                """SELECT id, embedding FROM memories WHERE team_id + 0 = %s AND id = ANY(%s)
                   AND status || '' = 'current' AND embedding IS NOT NULL AND embedding_model = %s""",
                (team_id, unique, model),
            ).fetchall()
        return {row["id"]: _array(row["embedding"]) for row in rows}

    def nearest(
        self, team_id: int, tag: str, model: str, query: np.ndarray, k: int
    ) -> list[tuple[str, float]] | None:
        """From the model's HNSW index; where the space's rows are too few among the model's for the
        index's candidates to hold k of them, exactly over the space (its rows by the space index)."""
        if k <= 0:
            return []
        dim = int(query.shape[0])
        self._ensure_vector_index(model, dim)
        cast = sql.SQL(vector_cast(dim))
        distance = sql.SQL("{} <=> %(q)s::vector({})").format(cast, sql.SQL(str(dim)))
        where = sql.SQL(
            "WHERE embedding_model = {} AND status = 'current' AND pinned = 0 AND team_id = %(team)s "
            "AND container_tag = %(tag)s"
        ).format(sql.Literal(model))
        approximate = sql.SQL("SELECT id, 1 - ({d}) AS similarity FROM memories {w} ORDER BY {d} LIMIT %(k)s")
        exact = sql.SQL("SELECT id, 1 - ({d}) AS similarity FROM memories {w} ORDER BY ({d}) + 0 LIMIT %(k)s")
        params = {"q": query.astype("float32"), "team": team_id, "tag": tag, "k": k}
        with self._connection() as db:
            rows = db.execute(approximate.format(d=distance, w=where), params).fetchall()
            if len(rows) < k:
                rows = db.execute(exact.format(d=distance, w=where), params).fetchall()
        found = [(str(row["id"]), float(row["similarity"])) for row in rows]
        return sorted(found, key=lambda pair: (-pair[1], pair[0]))

    def similarities(
        self, team_id: int, model: str, query: np.ndarray, ids: Sequence[str]
    ) -> dict[str, float] | None:
        dim = int(query.shape[0])
        statement = sql.SQL(
            "SELECT id, 1 - ({} <=> %s::vector({})) AS similarity FROM memories WHERE id = ANY(%s) "
            "AND team_id + 0 = %s AND status || '' = 'current' AND pinned = 0 AND embedding_model = %s"
        ).format(sql.SQL(vector_cast(dim)), sql.SQL(str(dim)))
        with self._connection() as db:
            rows = db.execute(statement, (query.astype("float32"), list(ids), team_id, model)).fetchall()
        return {str(row["id"]): float(row["similarity"]) for row in rows}

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

    # ------------------------------------------------------------------ extraction jobs

    def enqueue_job(
        self, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None
    ) -> str:
        job_id = new_id("job")
        with self.transaction(), self._connection() as db:
            # the device's row lock orders this against a revoke and against its other enqueues
            active = db.execute(
                "SELECT 1 FROM devices WHERE id = %s AND revoked_at IS NULL FOR UPDATE",
                (principal.device_id,),
            ).fetchone()
            if active is None:
                raise DeviceRevoked(principal.device_id)
            row = db.execute(
                """SELECT count(*) AS n FROM memory_extract_jobs WHERE device_id = %s
                   AND status IN ('queued', 'running')""",
                (principal.device_id,),
            ).fetchone()
            pending = int(row["n"]) if row else 0
            if pending >= self.max_pending_jobs:
                raise QueueFull(pending)
            db.execute(_ENQUEUE_JOB, job_values(job_id, principal, tag, content, metadata, now_s()))
        return job_id

    @staticmethod
    def _job(row: dict[str, Any]) -> Job:
        return job_from_row(row)

    def get_job(self, team_id: int, job_id: str) -> Job | None:
        with self._connection() as db:
            row = db.execute(
                "SELECT * FROM memory_extract_jobs WHERE id = %s AND team_id = %s", (job_id, team_id)
            ).fetchone()
        return None if row is None else self._job(row)

    def requeue_interrupted_jobs(self, max_attempts: int) -> int:
        """Jobs this store claimed, and jobs whose lease ran out (their door died), go back to the
        queue, or fail after `max_attempts`. A job another live door runs (its lease holds) is left
        alone. `max_attempts` also rules the jobs `claim_job` takes back from an expired lease."""
        self.job_max_attempts = max_attempts
        with self.transaction(), self._connection() as db:
            self._fail_exhausted(db, mine=True)
            cursor = db.execute(
                f"""UPDATE memory_extract_jobs SET status = 'queued', claimed_by = NULL, lease_until = NULL
                    WHERE id IN (SELECT id FROM memory_extract_jobs WHERE status = 'running'
                        AND (claimed_by = %s OR lease_until IS NULL OR lease_until < {_NOW})
                        FOR UPDATE SKIP LOCKED)""",
                (self.owner,),
            )
            return cursor.rowcount

    def _fail_exhausted(self, db: Connection, *, mine: bool) -> None:
        """Fail the running jobs out of attempts whose lease ran out (and, with `mine`, this store's)."""
        db.execute(
            f"""UPDATE memory_extract_jobs SET status = 'failed', finished_at = %s, error = %s,
                    claimed_by = NULL, lease_until = NULL
                WHERE id IN (SELECT id FROM memory_extract_jobs WHERE status = 'running' AND attempts >= %s
                    AND ((%s AND claimed_by = %s) OR lease_until IS NULL OR lease_until < {_NOW})
                    FOR UPDATE SKIP LOCKED)""",
            (now_s(), EXPIRED_JOB_ERROR, self.job_max_attempts, mine, self.owner),
        )

    def claim_job(self, after_device: str | None = None) -> Job | None:
        """The next job in the round over devices (`FAIR_JOB_ORDER_SQL`; a running one whose lease ran
        out counts as queued), now this store's: rows another door is claiming are skipped, never
        waited for."""
        with self.transaction(), self._connection() as db:
            self._fail_exhausted(db, mine=False)
            row = db.execute(
                f"""UPDATE memory_extract_jobs SET status = 'running', attempts = attempts + 1, started_at = %s,
                        claimed_by = %s, lease_until = {_NOW} + %s
                    WHERE id = (SELECT id FROM memory_extract_jobs WHERE status = 'queued'
                        OR (status = 'running' AND (lease_until IS NULL OR lease_until < {_NOW}))
                        ORDER BY {_FAIR_JOB_ORDER} LIMIT 1 FOR UPDATE SKIP LOCKED)
                    RETURNING *""",
                (now_s(), self.owner, self.job_lease_s, after_device or ""),
            ).fetchone()
        if row is None:
            return None
        self._start_renewing()
        return self._job(row)

    def _start_renewing(self) -> None:
        if self._renewer is None:
            self._renewer = threading.Thread(target=self._renew_leases, name="bli-memory-leases", daemon=True)
            self._renewer.start()

    def _renew_leases(self) -> None:
        """Extend the lease of every job this store runs, a third of a lease before it would end."""
        while not self._closed.wait(self.job_lease_s / 3):
            try:
                with self.transaction(), self._connection() as db:
                    db.execute(
                        f"""UPDATE memory_extract_jobs SET lease_until = {_NOW} + %s
                            WHERE claimed_by = %s AND status = 'running'""",
                        (self.job_lease_s, self.owner),
                    )
            except Exception:  # the server is away: the next round tries again
                continue

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None:
        with self.transaction(), self._connection() as db:
            db.execute(
                """UPDATE memory_extract_jobs SET status = 'done', outcome = %s, error = NULL, finished_at = %s,
                       lease_until = NULL WHERE id = %s AND status = 'running' AND claimed_by = %s""",
                (json.dumps(outcome), now_s(), job_id, self.owner),
            )

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        with self.transaction(), self._connection() as db:
            db.execute(
                """UPDATE memory_extract_jobs SET outcome = %s
                   WHERE id = %s AND status = 'running' AND claimed_by = %s""",
                (json.dumps({"progress": progress}), job_id, self.owner),
            )

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        with self.transaction(), self._connection() as db:
            db.execute(
                """UPDATE memory_extract_jobs SET status = %s, error = %s, finished_at = %s, claimed_by = NULL,
                       lease_until = NULL WHERE id = %s AND status = 'running' AND claimed_by = %s""",
                ("queued" if retry else "failed", error, None if retry else now_s(), job_id, self.owner),
            )

    def job_may_write(self, job: Job) -> bool:
        """Whether the job is still running under this store's claim and its device active. The job's
        row is locked until the caller's transaction ends: a revoke, or a door taking over an
        expired lease, waits for it."""
        with self.transaction(), self._connection() as db:
            row = db.execute(
                """SELECT j.status, j.claimed_by, d.revoked_at FROM memory_extract_jobs j
                   LEFT JOIN devices d ON d.id = j.device_id WHERE j.id = %s FOR UPDATE OF j""",
                (job.id,),
            ).fetchone()
            if row is None or row["status"] != "running" or row["claimed_by"] != self.owner:
                return False
            if row["revoked_at"] is not None:
                db.execute(
                    """UPDATE memory_extract_jobs SET status = 'cancelled', error = %s, finished_at = %s
                       WHERE id = %s""",
                    (REVOKED_JOB_ERROR, now_s(), job.id),
                )
                return False
        return True

    # ------------------------------------------------------------------ copying rows between stores

    def dump_rows(self, table: str, after: tuple[Any, ...] | None, limit: int) -> list[dict[str, Any]]:
        columns = COPY_COLUMNS[_copied_table(table)]
        key = PRIMARY_KEYS[table]
        selected = sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(sql.Identifier(_column(name)), sql.Identifier(name))
            for name in columns
        )
        key_columns = sql.SQL(", ").join(sql.Identifier(_column(name)) for name in key)
        query = sql.SQL("SELECT {} FROM {}").format(selected, sql.Identifier(table))
        params: list[Any] = []
        if after is not None:
            marks = sql.SQL(", ").join(sql.Placeholder() for _ in key)
            query += sql.SQL(" WHERE ({}) > ({})").format(key_columns, marks)
            params += list(after)
        query += sql.SQL(" ORDER BY {} LIMIT %s").format(key_columns)
        params.append(limit)
        with self._connection() as db:
            rows = db.execute(query, params).fetchall()
        if table == "memories":
            for row in rows:
                vector = row["embedding"]
                row["embedding"] = None if vector is None else _array(vector).tobytes()
        return [dict(row) for row in rows]

    def load_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> int:
        """One transaction; a key already present is skipped (ON CONFLICT DO NOTHING on the primary
        key only: a row breaking another constraint fails the whole call)."""
        columns = COPY_COLUMNS[_copied_table(table)]
        if not rows:
            return 0
        statement = sql.SQL("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO NOTHING").format(
            sql.Identifier(table),
            sql.SQL(", ").join(sql.Identifier(_column(name)) for name in columns),
            sql.SQL(", ").join(sql.Placeholder() for _ in columns),
            sql.SQL(", ").join(sql.Identifier(_column(name)) for name in PRIMARY_KEYS[table]),
        )
        values = [tuple(_loadable(table, name, row.get(name)) for name in columns) for row in rows]
        if table == "memories":  # indexed as they come: no first search waits for a whole build
            for model, dim in {
                (row["embedding_model"], len(row["embedding"]) // 4) for row in rows if row.get("embedding")
            }:
                if model:
                    self._ensure_vector_index(model, dim)
        with self.transaction(), self._connection() as db:
            if table == "memories":  # a bulk copy: the spaces it fills are rebuilt, not read row by row
                for team_id, tag in {(row["team_id"], row["container_tag"]) for row in rows}:
                    self._changed("space", team_id, tag)
            elif table == "container_aliases":
                for team_id in {row["team_id"] for row in rows}:
                    self._changed("aliases", team_id)
            with db.cursor() as cursor:
                cursor.executemany(statement, values)  # pipelined: one round trip per batch
                inserted = cursor.rowcount
            identity = _IDENTITY_COLUMNS.get(table)
            if identity is not None:
                db.execute(
                    sql.SQL(
                        "SELECT setval(pg_get_serial_sequence({table}, {column}), "
                        "(SELECT coalesce(max({ident}), 0) + 1 FROM {name}), false)"
                    ).format(
                        table=sql.Literal(table),
                        column=sql.Literal(identity),
                        ident=sql.Identifier(identity),
                        name=sql.Identifier(table),
                    )
                )
        return inserted

    def count_rows(self, table: str) -> int:
        """How many rows `table` holds (migrate's progress; not part of the Store protocol)."""
        with self._connection() as db:
            row = db.execute(
                sql.SQL("SELECT count(*) AS n FROM {}").format(sql.Identifier(_copied_table(table)))
            ).fetchone()
        return int(row["n"]) if row else 0

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
        with self.transaction(), self._connection() as db:
            inserted = db.execute(
                _INSERT_EXPERIENCE,
                experience_values(principal, entry_id, store, verdict, reason, created_at, now_s()),
            )
            if inserted.rowcount == 1:
                return "inserted"
            existing = db.execute(
                "SELECT * FROM experience WHERE team_id = %s AND id = %s", (principal.team_id, entry_id)
            ).fetchone()
        same = existing is not None and same_experience(
            existing, principal, store, verdict, reason, created_at
        )
        return "identical" if same else "conflict"

    def experience_count(self, team_id: int, since: float) -> int:
        with self._connection() as db:
            row = db.execute(
                "SELECT count(*) AS n FROM experience WHERE team_id = %s AND created_at >= %s",
                (team_id, since),
            ).fetchone()
        return int(row["n"]) if row else 0

    def experience_page(
        self, team_id: int, since: float, after: tuple[float, str], limit: int
    ) -> list[dict[str, Any]]:
        with self._connection() as db:
            page = db.execute(_EXPERIENCE_PAGE, (team_id, after[0], after[1], since, limit)).fetchall()
        return [dict(row) for row in page]

    # ------------------------------------------------------------------ hook figures

    def put_hook_stats(self, principal: Principal, hours: Sequence[tuple[str, str]]) -> int:
        received = now_s()
        with self.transaction(), self._connection() as db, db.cursor() as cursor:
            cursor.executemany(_PUT_HOOK_STATS, hook_stats_values(principal, hours, received))
        return len(hours)

    def hook_stats_since(self, team_id: int, since_hour: str) -> list[tuple[str, str, str]]:
        with self._connection() as db:
            rows = db.execute(
                """SELECT device_id, hour, counts FROM hook_stats WHERE team_id = %s AND hour >= %s
                   ORDER BY hour, device_id""",
                (team_id, since_hour),
            ).fetchall()
        return [(row["device_id"], row["hour"], row["counts"]) for row in rows]

    def prune_hook_stats(self, before_hour: str, limit: int) -> int:
        with self.transaction(), self._connection() as db:
            deleted = db.execute(
                """DELETE FROM hook_stats WHERE ctid IN
                   (SELECT ctid FROM hook_stats WHERE hour < %s LIMIT %s)""",
                (before_hour, limit),
            )
            return int(deleted.rowcount)


def _copied_table(table: str) -> str:
    """`table` when dump_rows/load_rows copy it; ValueError otherwise (a table name goes into SQL)."""
    if table not in COPY_TABLES:
        raise ValueError(f"not a copied table: {table!r}")
    return table


def _array(vector: Any) -> np.ndarray:
    """A pgvector value as float32 numpy (the adapter gives a `Vector` or an array by format)."""
    import numpy as np

    value = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
    return np.asarray(value, dtype=np.float32)


def _loadable(table: str, name: str, value: Any) -> Any:
    """A dumped value as PostgreSQL takes it: a memory's float32 bytes become a vector, a JSON
    column's parsed value its text (a dump gives either)."""
    if table == "memories" and name == "embedding" and value is not None:
        import numpy as np

        return np.frombuffer(bytes(value), dtype=np.float32)
    if name in JSON_COLUMNS.get(table, ()) and value is not None and not isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value
