"""The PostgreSQL store's devices role (`roles/devices.py`): teams, people, devices and tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

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
from bli_memory.door.store.postgres.connection import (
    REVOKED_JOB_ERROR,
    PostgresConnection,
)
from bli_memory.door.store.roles.devices import DeviceStore

if TYPE_CHECKING:
    Connection = psycopg.Connection[dict[str, Any]]


_AUTHENTICATE = in_dialect(AUTHENTICATE_SQL, "%s")
_PRINCIPAL_FOR_JOB = in_dialect(PRINCIPAL_FOR_JOB_SQL, "%s")


class PostgresDevices(PostgresConnection, DeviceStore):
    """Teams, people and devices: a device's token kept as its hash; a revoke cancels the device's waiting
    jobs in the same transaction."""

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
                f"""UPDATE memory_extract_jobs SET status = '{JobState.CANCELLED}', error = %s, finished_at = %s
                   WHERE device_id = %s AND status IN ('{JobState.QUEUED}', '{JobState.RUNNING}')""",
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

    def team_named(self, team: str) -> int | None:
        with self._connection() as db:
            row = db.execute("SELECT id FROM teams WHERE name = %s", (team,)).fetchone()
        return None if row is None else int(row["id"])
