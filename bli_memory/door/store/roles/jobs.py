"""The job queue role: extraction jobs, queued by a save and claimed by each door's worker in a
round over the devices (their states and moves: `door/job_states.py`)."""

from __future__ import annotations

from typing import Any, Protocol

from bli_memory.door.model import Job, Principal


class JobQueueStore(Protocol):
    """A durable queue of extraction jobs: a job's facts and its `done` mark land in one transaction."""

    def enqueue_job(
        self, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None
    ) -> str:
        """A new queued job's id. Raises QueueFull past the device's cap of waiting jobs, and
        DeviceRevoked when the device was revoked since its request was authenticated."""
        ...

    def get_job(self, team_id: int, job_id: str) -> Job | None: ...

    def requeue_interrupted_jobs(self, max_attempts: int) -> int:
        """At start: jobs left `running` go back to the queue (failed after `max_attempts`). A store
        several doors share takes back only its own and those whose door's lease ran out, never a
        job another live door is running."""
        ...

    def claim_job(self, after_device: str | None = None) -> Job | None:
        """The next queued job in a round over the devices that have one, now `running` (attempts
        counted), or None: the oldest job of the first such device after `after_device` (the
        device of the claimer's previous job) in device-id order, wrapping round; None starts the
        round. One device's backlog thus never holds another device's jobs back by more than one
        job per waiting device (`FAIR_JOB_ORDER_SQL`). Two claimers never get the same job; on a shared
        store a job whose door's lease ran out is claimable again."""
        ...

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None: ...

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        """Keep a running job's progress as its `outcome` (`{"progress": ...}`), inside the caller's
        transaction with the writes it records: a job resumed after a crash or a retry starts after
        the facts it already applied (`jobs.run_job`). Never on a job no longer this claimer's."""
        ...

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        """Put a running job back in the queue or mark it failed (never one cancelled meanwhile)."""
        ...

    def job_may_write(self, job: Job) -> bool:
        """Whether a claimed job is still running and its device still active. Inside the job's
        write transaction this is final: a revoke commits before it or waits for it."""
        ...
