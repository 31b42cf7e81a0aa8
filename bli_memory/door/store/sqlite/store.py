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
- The parts: `connection.py` (the file, its lock, transactions, errors mapped to the door's), then one
  module per role of `roles/`: `changes.py`, `devices.py`, `memories.py`, `vectors.py`, `jobs.py`,
  `ops.py`, `copy.py`; `SqliteStore` is their composition.
"""

from __future__ import annotations

import sqlite3

from bli_memory.door.store.sqlite.changes import SqliteChanges
from bli_memory.door.store.sqlite.copy import SqliteCopy
from bli_memory.door.store.sqlite.devices import SqliteDevices
from bli_memory.door.store.sqlite.jobs import SqliteJobs
from bli_memory.door.store.sqlite.memories import SqliteMemoryRows
from bli_memory.door.store.sqlite.ops import SqliteOps
from bli_memory.door.store.sqlite.schema import SCHEMA_VERSION
from bli_memory.door.store.sqlite.vectors import SqliteVectors


class SqliteStore(
    SqliteChanges,
    SqliteDevices,
    SqliteMemoryRows,
    SqliteVectors,
    SqliteJobs,
    SqliteOps,
    SqliteCopy,
):
    """The door's rows in one SQLite file. Thread-safe; every write method is one transaction."""

    name = "sqlite"
    #: its index snapshots are its own door's: one without a stamp predates the change log
    unstamped_snapshots_at_log_start = True
    #: the schema version this code writes (a file is brought to it when opened).
    SCHEMA_VERSION = SCHEMA_VERSION
    version = sqlite3.sqlite_version
