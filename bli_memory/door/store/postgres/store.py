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
- The parts: `connection.py` (the pool, transactions, errors mapped to the door's), then one module per
  role of `roles/`: `changes.py`, `devices.py`, `memories.py`, `vectors.py`, `jobs.py`, `ops.py`,
  `copy.py`; `PostgresStore` is their composition.
"""

from __future__ import annotations

from bli_memory.door.store.postgres.changes import PostgresChanges
from bli_memory.door.store.postgres.copy import PostgresCopy
from bli_memory.door.store.postgres.devices import PostgresDevices
from bli_memory.door.store.postgres.jobs import PostgresJobs
from bli_memory.door.store.postgres.memories import PostgresMemoryRows
from bli_memory.door.store.postgres.ops import PostgresOps
from bli_memory.door.store.postgres.schema import SCHEMA_VERSION
from bli_memory.door.store.postgres.vectors import PostgresVectors


class PostgresStore(
    PostgresChanges,
    PostgresDevices,
    PostgresMemoryRows,
    PostgresVectors,
    PostgresJobs,
    PostgresOps,
    PostgresCopy,
):
    """The door's rows in one PostgreSQL database. Thread-safe; every write method is one transaction."""

    name = "postgresql"
    #: the server checks its own pages (`is_damage` reads its verdict): no check of the door's
    integrity = None
    #: several doors write snapshots of it: one without a stamp says nothing of when it was taken
    unstamped_snapshots_at_log_start = False
    #: the schema version this code writes (a database is brought to it when opened).
    SCHEMA_VERSION = SCHEMA_VERSION
