"""An extraction job's states and the moves between them, as data.

The values are what the stores keep in `memory_extract_jobs.status` and what `GET /api/jobs/{id}`
answers, so they never change; a store's SQL names them through `JobState`, whose members are their
text (`str()` and a format give the value, on every Python the door runs on). `NEXT_STATES` is every
move a store makes: the queue's claim, a finish, a retry or a failure, a revoke's cancel, a
restart's requeue, and a shared store's claim of a job whose lease ran out (running to running, by
another door). `done`, `failed` and `cancelled` are final.
"""

from __future__ import annotations

from enum import Enum


class JobState(str, Enum):
    """Where an extraction job is in its life; each is its own text (`str()`, in SQL and JSON)."""

    #: waiting for a worker (new, retried, or taken back from a door that stopped)
    QUEUED = "queued"
    #: claimed by a worker, its attempts counted
    RUNNING = "running"
    #: its facts written, its outcome kept
    DONE = "done"
    #: given up: an error not worth retrying, or out of attempts
    FAILED = "failed"
    #: its device was revoked before it finished
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return str(self.value)


#: the states a job may move to from each state (the stores' writes keep to these)
NEXT_STATES: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED}),
    JobState.RUNNING: frozenset(
        {JobState.RUNNING, JobState.QUEUED, JobState.DONE, JobState.FAILED, JobState.CANCELLED}
    ),
    JobState.DONE: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}
#: the states that still hold a job in the queue (counted against a device's cap of waiting jobs)
PENDING_STATES = (JobState.QUEUED, JobState.RUNNING)


def may_move(current: JobState | str, to: JobState | str) -> bool:
    """Whether a job in `current` may move to `to` (a state name this door does not know: never)."""
    try:
        return JobState(to) in NEXT_STATES[JobState(current)]
    except ValueError:
        return False


def is_final(state: JobState | str) -> bool:
    """Whether a job in `state` is over (nothing moves it again)."""
    return not NEXT_STATES[JobState(state)]
