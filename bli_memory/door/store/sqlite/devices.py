"""The SQLite store's devices role (`roles/devices.py`): teams, people, devices and tokens."""

from __future__ import annotations

from typing import Any

from bli_memory.door.job_states import JobState
from bli_memory.door.model import Job, Principal, hash_text, new_id, new_token, now_s
from bli_memory.door.store.base import (
    AUTHENTICATE_SQL,
    LIST_DEVICES_SQL,
    PRINCIPAL_FOR_JOB_SQL,
    in_dialect,
    job_principal_from_row,
    principal_from_row,
)
from bli_memory.door.store.roles.devices import DeviceStore
from bli_memory.door.store.sqlite.connection import (
    REVOKED_JOB_ERROR,
    SqliteConnection,
)

_AUTHENTICATE = in_dialect(AUTHENTICATE_SQL, "?")
_PRINCIPAL_FOR_JOB = in_dialect(PRINCIPAL_FOR_JOB_SQL, "?")


class SqliteDevices(SqliteConnection, DeviceStore):
    """Teams, people and devices: a device's token kept as its hash; a revoke cancels the device's waiting
    jobs in the same transaction."""

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
        with self._read():
            row = self._db.execute(_AUTHENTICATE, (hash_text(token),)).fetchone()
        return None if row is None else principal_from_row(row)

    def list_devices(self) -> list[dict[str, Any]]:
        with self._read():
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
                f"""UPDATE memory_extract_jobs SET status = '{JobState.CANCELLED}', error = ?, finished_at = ?
                   WHERE device_id = ? AND status IN ('{JobState.QUEUED}', '{JobState.RUNNING}')""",
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
        with self._read():
            row = self._db.execute(_PRINCIPAL_FOR_JOB, (job.device_id, job.person_id)).fetchone()
        return job_principal_from_row(job, row)

    def team_named(self, team: str) -> int | None:
        with self._read():
            row = self._db.execute("SELECT id FROM teams WHERE name = ?", (team,)).fetchone()
        return None if row is None else int(row[0])
