"""The extraction queue: jobs as the API sees them (enqueue, read) and as the door's worker runs
them (claim, progress, finish, fail, requeue), and the pruning of the devices' hook figures the same
worker does.

Separate so that the worker (`door/jobs.py`) reaches the store only through the service: every
question it asks about a job is one of these methods.
"""

from __future__ import annotations

from typing import Any

from bli_memory.door.errors import NotFound
from bli_memory.door.model import Job, Principal
from bli_memory.door.service.spaces import Spaces
from bli_memory.door.store.roles import Store


class JobQueue:
    """The extraction jobs of `store`, seen as `spaces` says a caller may see them."""

    def __init__(self, store: Store, spaces: Spaces) -> None:
        self.store = store
        self.spaces = spaces

    # ------------------------------------------------------------------ the API's side

    def enqueue_job(
        self, principal: Principal, tag: str, content: str, metadata: dict[str, Any] | None
    ) -> tuple[str, str]:
        """Write one durable job row; returns (job id, canonical tag)."""
        canonical = self.spaces.canonical_tag(principal, tag)
        # a device revoked meanwhile answers 401 and a full queue 429: both are the store's DoorErrors
        return self.store.enqueue_job(principal, canonical, content, metadata), canonical

    def get_job(self, principal: Principal, job_id: str) -> Job:
        """A job of the caller's team; one that writes into another person's global space is theirs
        alone (the same 404 as an id that does not exist)."""
        job = self.store.get_job(principal.team_id, job_id)
        if job is None or not self.spaces.tag_visible(principal, job.container_tag):
            raise NotFound(f"no job {job_id!r}")
        return job

    # ------------------------------------------------------------------ the worker's side

    def claim_job(self, after_device: str | None = None) -> Job | None:
        """The next queued job in a round over the devices that have one (`Store.claim_job`)."""
        return self.store.claim_job(after_device=after_device)

    def requeue_interrupted_jobs(self, max_attempts: int) -> int:
        """At start: the jobs left running go back to the queue (`Store.requeue_interrupted_jobs`)."""
        return self.store.requeue_interrupted_jobs(max_attempts)

    def job_may_write(self, job: Job) -> bool:
        """Whether a claimed job may still write (final inside the job's write transaction)."""
        return self.store.job_may_write(job)

    def principal_for_job(self, job: Job) -> Principal:
        """Who a job writes as: the device that enqueued it."""
        return self.store.principal_for_job(job)

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        """Keep a running job's progress, inside the transaction of the writes it records."""
        self.store.keep_job_progress(job_id, progress)

    def fail_job(self, job_id: str, error: str, *, retry: bool) -> None:
        """Put a running job back in the queue or mark it failed."""
        self.store.fail_job(job_id, error, retry=retry)

    def prune_hook_stats(self, before_hour: str, limit: int) -> int:
        """Delete up to `limit` hourly hook figures of hours before `before_hour`; how many."""
        return self.store.prune_hook_stats(before_hour, limit)

    def is_damage(self, exc: BaseException) -> bool:
        """Whether `exc` says the stored data is damaged (background work then stops for good)."""
        return self.store.is_damage(exc)
