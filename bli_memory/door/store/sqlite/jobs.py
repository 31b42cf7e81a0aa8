"""The SQLite store's job queue role (`roles/jobs.py`): extraction jobs and their states
(`door/job_states.py`)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from bli_memory.door.errors import DeviceRevoked, QueueFull
from bli_memory.door.job_states import JobState
from bli_memory.door.model import Job, Principal, new_id, now_s
from bli_memory.door.store.base import (
    ENQUEUE_JOB_SQL,
    FAIR_JOB_ORDER_SQL,
    in_dialect,
    job_from_row,
    job_values,
)
from bli_memory.door.store.roles.jobs import JobQueueStore
from bli_memory.door.store.sqlite.connection import (
    REVOKED_JOB_ERROR,
    SqliteConnection,
)

_ENQUEUE_JOB = in_dialect(ENQUEUE_JOB_SQL, "?")
_FAIR_JOB_ORDER = in_dialect(FAIR_JOB_ORDER_SQL, "?")


class SqliteJobs(SqliteConnection, JobQueueStore):
    """The job queue: claimed in a round over the devices under SQLite's one write lock."""

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
                f"""SELECT count(*) FROM memory_extract_jobs WHERE device_id = ?
                   AND status IN ('{JobState.QUEUED}', '{JobState.RUNNING}')""",
                (principal.device_id,),
            ).fetchone()[0]
            if pending >= self.max_pending_jobs:
                raise QueueFull(pending)
            self._db.execute(_ENQUEUE_JOB, job_values(job_id, principal, tag, content, metadata, now_s()))
        return job_id

    def _job(self, row: sqlite3.Row) -> Job:
        return job_from_row(row)

    def get_job(self, team_id: int, job_id: str) -> Job | None:
        with self._read():
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
                f"""UPDATE memory_extract_jobs SET status = '{JobState.FAILED}', finished_at = ?,
                       error = 'interrupted by a door restart at each of its attempts'
                   WHERE status = '{JobState.RUNNING}' AND attempts >= ?""",
                (now_s(), max_attempts),
            )
            cursor = self._db.execute(
                f"UPDATE memory_extract_jobs SET status = '{JobState.QUEUED}' WHERE status = '{JobState.RUNNING}'"
            )
            return cursor.rowcount

    def claim_job(self, after_device: str | None = None) -> Job | None:
        with self.transaction():
            row = self._db.execute(
                f"SELECT * FROM memory_extract_jobs WHERE status = '{JobState.QUEUED}' ORDER BY {_FAIR_JOB_ORDER} LIMIT 1",
                (after_device or "",),
            ).fetchone()
            if row is None:
                return None
            self._db.execute(
                f"UPDATE memory_extract_jobs SET status = '{JobState.RUNNING}', attempts = attempts + 1, started_at = ? "
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
                f"UPDATE memory_extract_jobs SET status = '{JobState.DONE}', outcome = ?, error = NULL, finished_at = ? "
                f"WHERE id = ? AND status = '{JobState.RUNNING}'",
                (json.dumps(outcome), now_s(), job_id),
            )

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        with self._statement():
            self._db.execute(
                f"UPDATE memory_extract_jobs SET outcome = ? WHERE id = ? AND status = '{JobState.RUNNING}'",
                (json.dumps({"progress": progress}), job_id),
            )

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        with self._statement():
            self._db.execute(
                "UPDATE memory_extract_jobs SET status = ?, error = ?, finished_at = ? WHERE id = ? "
                f"AND status = '{JobState.RUNNING}'",
                (
                    (JobState.QUEUED if retry else JobState.FAILED).value,
                    error,
                    None if retry else now_s(),
                    job_id,
                ),
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
            if row is None or row["status"] != JobState.RUNNING:
                return False
            if row["revoked_at"] is not None:
                self._db.execute(
                    f"""UPDATE memory_extract_jobs SET status = '{JobState.CANCELLED}', error = ?, finished_at = ?
                       WHERE id = ?""",
                    (REVOKED_JOB_ERROR, now_s(), job.id),
                )
                return False
        return True
