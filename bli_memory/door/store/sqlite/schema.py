"""The SQLite schema, one list of statements per version.

A file records its version in `PRAGMA user_version`; opening it applies the steps it lacks, each
step and its version mark in the one transaction that opens the store. Statements are listed one by
one (never a script split on `;`, which would break on a `;` inside a string or a trigger).
"""

from __future__ import annotations

from bli_memory.door.job_states import JobState

SCHEMA_VERSION = 7

MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE teams (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at REAL NOT NULL
        )""",
        """CREATE TABLE people (
            id INTEGER PRIMARY KEY,
            team_id INTEGER NOT NULL REFERENCES teams(id),
            name TEXT NOT NULL,
            admin INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            UNIQUE (team_id, name)
        )""",
        """CREATE TABLE devices (
            id TEXT PRIMARY KEY,
            person_id INTEGER NOT NULL REFERENCES people(id),
            token_hash TEXT NOT NULL UNIQUE,
            label TEXT,
            created_at REAL NOT NULL,
            last_used_at REAL,
            revoked_at REAL
        )""",
        """CREATE TABLE memories (
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
        )""",
        "CREATE INDEX memories_space ON memories (team_id, container_tag, status, updated_at)",
        "CREATE INDEX memories_root ON memories (root_id, version)",
        "CREATE INDEX memories_hash ON memories (team_id, container_tag, content_hash) WHERE status = 'current'",
        "CREATE INDEX memories_custom ON memories (team_id, container_tag, custom_id) WHERE status = 'current'",
        """CREATE VIRTUAL TABLE memories_fts USING fts5 (
            content, space, tokenize = 'porter unicode61 remove_diacritics 2'
        )""",
        """CREATE TABLE container_aliases (
            team_id INTEGER NOT NULL REFERENCES teams(id),
            alias TEXT NOT NULL,
            canonical TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (team_id, alias)
        )""",
        f"""CREATE TABLE memory_extract_jobs (
            id TEXT PRIMARY KEY,
            team_id INTEGER NOT NULL,
            person_id INTEGER NOT NULL,
            device_id TEXT NOT NULL,
            container_tag TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata TEXT,
            status TEXT NOT NULL DEFAULT '{JobState.QUEUED}',
            attempts INTEGER NOT NULL DEFAULT 0,
            outcome TEXT,
            error TEXT,
            created_at REAL NOT NULL,
            started_at REAL,
            finished_at REAL
        )""",
        "CREATE INDEX jobs_status ON memory_extract_jobs (status, created_at)",
        """CREATE TABLE experience (
            id TEXT PRIMARY KEY,
            team_id INTEGER NOT NULL,
            person_id INTEGER NOT NULL,
            device_id TEXT,
            store TEXT NOT NULL,
            verdict TEXT NOT NULL,
            reason TEXT NOT NULL,
            created_at REAL NOT NULL,
            received_at REAL NOT NULL
        )""",
        "CREATE INDEX experience_time ON experience (team_id, created_at)",
    ],
    # v2: vectors name the model that made them (so a model change never mixes vector spaces and
    # rows without a current vector are backfilled), and experience ids are scoped to their team
    # (one team can neither see nor block another's ids).
    2: [
        "ALTER TABLE memories ADD COLUMN embedding_model TEXT",
        """CREATE TABLE experience_v2 (
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
        )""",
        """INSERT INTO experience_v2 SELECT id, team_id, person_id, device_id, store, verdict, reason, created_at,
            received_at FROM experience""",
        "DROP TABLE experience",
        "ALTER TABLE experience_v2 RENAME TO experience",
        "CREATE INDEX experience_time ON experience (team_id, created_at)",
    ],
    # v3: keyword search moved to an in-memory index (door/keyword.py); the FTS5 table goes.
    3: [
        "DROP TABLE IF EXISTS memories_fts",
    ],
    # v4: admin is a property of one device, not of the person: pairing a second device of an admin
    # no longer hands it admin, and `pair --admin` no longer promotes the person's other devices.
    # Every device keeps what it had (its person's flag); `people.admin` stays (DROP COLUMN needs
    # SQLite 3.35) and is no longer read. Jobs of devices revoked before v4 are cancelled, and jobs
    # are found by device for the queue cap and for revoking.
    4: [
        "ALTER TABLE devices ADD COLUMN admin INTEGER NOT NULL DEFAULT 0",
        "UPDATE devices SET admin = (SELECT p.admin FROM people p WHERE p.id = devices.person_id)",
        "CREATE INDEX jobs_device ON memory_extract_jobs (device_id, status)",
        f"""UPDATE memory_extract_jobs SET status = '{JobState.CANCELLED}', error = 'cancelled: its device was revoked'
            WHERE status IN ('{JobState.QUEUED}', '{JobState.RUNNING}')
            AND device_id IN (SELECT id FROM devices WHERE revoked_at IS NOT NULL)""",
    ],
    # v5: each device's hourly hook figures (content-free counts, as its stats files hold them),
    # one row per device and hour, replaced when the device sends that hour again.
    5: [
        """CREATE TABLE hook_stats (
            team_id INTEGER NOT NULL,
            device_id TEXT NOT NULL,
            person_id INTEGER NOT NULL,
            hour TEXT NOT NULL,
            counts TEXT NOT NULL,
            received_at REAL NOT NULL,
            PRIMARY KEY (team_id, device_id, hour)
        )""",
        "CREATE INDEX hook_stats_time ON hook_stats (team_id, hour)",
    ],
    # v6: what each write changed, so that an index snapshot stays valid across writes (a door killed
    # after writing replays the log from its snapshot's position instead of building). `bli_changes`
    # is one row: the counter every transaction writing memories or aliases bumps at its end, the
    # newest counter value whose log rows were pruned, and a random name of this database for the
    # snapshot stamps. `bli_change_log` holds what each transaction changed under the value it took:
    # a memory, a whole space, a whole team, or a team's aliases (as PostgreSQL's log).
    6: [
        """CREATE TABLE bli_changes (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            counter INTEGER NOT NULL,
            pruned_through INTEGER NOT NULL,
            identity TEXT NOT NULL
        )""",
        "INSERT INTO bli_changes (id, counter, pruned_through, identity) VALUES (1, 0, 0, lower(hex(randomblob(16))))",
        """CREATE TABLE bli_change_log (
            counter INTEGER NOT NULL,
            kind TEXT NOT NULL,
            team_id INTEGER NOT NULL,
            container_tag TEXT,
            memory_id TEXT
        )""",
        "CREATE INDEX bli_change_log_counter ON bli_change_log (counter)",
    ],
    # v7: the retention sweep reads the oldest current stored exchanges (`expired_documents`); without
    # this index each sweep read every row of the table.
    7: [
        "CREATE INDEX memories_documents_age ON memories (created_at) WHERE status = 'current' AND kind = 'document'",
    ],
}
