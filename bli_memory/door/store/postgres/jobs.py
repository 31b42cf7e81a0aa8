"""The PostgreSQL store's job queue role (`roles/jobs.py`): extraction jobs and their states
(`door/job_states.py`)."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

import psycopg

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
from bli_memory.door.store.postgres.connection import (
    REVOKED_JOB_ERROR,
    PostgresConnection,
)
from bli_memory.door.store.roles.jobs import JobQueueStore

if TYPE_CHECKING:
    Connection = psycopg.Connection[dict[str, Any]]


EXPIRED_JOB_ERROR = "interrupted (its door stopped or lost its lease) at each of its attempts"
_NOW = "extract(epoch from clock_timestamp())"
_ENQUEUE_JOB = in_dialect(ENQUEUE_JOB_SQL, "%s")
_FAIR_JOB_ORDER = in_dialect(FAIR_JOB_ORDER_SQL, "%s")


class PostgresJobs(PostgresConnection, JobQueueStore):
    """The job queue several doors share: claimed with `FOR UPDATE SKIP LOCKED` under a lease a thread
    renews."""

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
                f"""SELECT count(*) AS n FROM memory_extract_jobs WHERE device_id = %s
                   AND status IN ('{JobState.QUEUED}', '{JobState.RUNNING}')""",
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
                f"""UPDATE memory_extract_jobs SET status = '{JobState.QUEUED}', claimed_by = NULL, lease_until = NULL
                    WHERE id IN (SELECT id FROM memory_extract_jobs WHERE status = '{JobState.RUNNING}'
                        AND (claimed_by = %s OR lease_until IS NULL OR lease_until < {_NOW})
                        FOR UPDATE SKIP LOCKED)""",
                (self.owner,),
            )
            return cursor.rowcount

    def _fail_exhausted(self, db: Connection, *, mine: bool) -> None:
        """Fail the running jobs out of attempts whose lease ran out (and, with `mine`, this store's)."""
        db.execute(
            f"""UPDATE memory_extract_jobs SET status = '{JobState.FAILED}', finished_at = %s, error = %s,
                    claimed_by = NULL, lease_until = NULL
                WHERE id IN (SELECT id FROM memory_extract_jobs WHERE status = '{JobState.RUNNING}' AND attempts >= %s
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
                f"""UPDATE memory_extract_jobs SET status = '{JobState.RUNNING}', attempts = attempts + 1, started_at = %s,
                        claimed_by = %s, lease_until = {_NOW} + %s
                    WHERE id = (SELECT id FROM memory_extract_jobs WHERE status = '{JobState.QUEUED}'
                        OR (status = '{JobState.RUNNING}' AND (lease_until IS NULL OR lease_until < {_NOW}))
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
                            WHERE claimed_by = %s AND status = '{JobState.RUNNING}'""",
                        (self.job_lease_s, self.owner),
                    )
            except Exception:  # the server is away: the next round tries again
                continue

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None:
        with self.transaction(), self._connection() as db:
            db.execute(
                f"""UPDATE memory_extract_jobs SET status = '{JobState.DONE}', outcome = %s, error = NULL, finished_at = %s,
                       lease_until = NULL WHERE id = %s AND status = '{JobState.RUNNING}' AND claimed_by = %s""",
                (json.dumps(outcome), now_s(), job_id, self.owner),
            )

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        with self.transaction(), self._connection() as db:
            db.execute(
                f"""UPDATE memory_extract_jobs SET outcome = %s
                   WHERE id = %s AND status = '{JobState.RUNNING}' AND claimed_by = %s""",
                (json.dumps({"progress": progress}), job_id, self.owner),
            )

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        with self.transaction(), self._connection() as db:
            db.execute(
                f"""UPDATE memory_extract_jobs SET status = %s, error = %s, finished_at = %s, claimed_by = NULL,
                       lease_until = NULL WHERE id = %s AND status = '{JobState.RUNNING}' AND claimed_by = %s""",
                (
                    (JobState.QUEUED if retry else JobState.FAILED).value,
                    error,
                    None if retry else now_s(),
                    job_id,
                    self.owner,
                ),
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
            if row is None or row["status"] != JobState.RUNNING or row["claimed_by"] != self.owner:
                return False
            if row["revoked_at"] is not None:
                db.execute(
                    f"""UPDATE memory_extract_jobs SET status = '{JobState.CANCELLED}', error = %s, finished_at = %s
                       WHERE id = %s""",
                    (REVOKED_JOB_ERROR, now_s(), job.id),
                )
                return False
        return True
