"""A running job's progress (`keep_job_progress`) is kept in its row on both stores: a retried or
requeued job comes back with it, `done` replaces it with the outcome, and a job that is not running
(or, on a shared store, not this door's) is never written."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bli_memory.door.store.postgres import PostgresStore
from bli_memory.door.store.roles import Store
from tests.door.helpers import store_principal
from tests.door.store.helpers import STORES, open_kind

PROGRESS = {"facts": ["one", "two"], "applied": 1, "roots": ["m1"], "written": ["m1"], "counts": {"added": 1}}


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = open_kind(request.param, tmp_path, request)
    yield opened
    opened.close()


def test_a_jobs_progress_comes_back_with_it_until_it_is_done(store: Store) -> None:
    ada = store_principal(store)
    job_id = store.enqueue_job(ada, "t", "exchange", None)
    store.keep_job_progress(job_id, PROGRESS)  # queued, not running: not written
    queued = store.get_job(ada.team_id, job_id)
    assert queued is not None and queued.outcome is None
    claimed = store.claim_job()
    assert claimed is not None and claimed.id == job_id
    with store.transaction():  # inside the writes it records, as the worker keeps it
        store.keep_job_progress(job_id, PROGRESS)
    store.fail_job(job_id, "OSError: disk I/O error", retry=True)
    retried = store.claim_job()
    assert retried is not None and retried.outcome == {"progress": PROGRESS} and retried.attempts == 2
    assert store.requeue_interrupted_jobs(max_attempts=3) == 1  # a door killed meanwhile
    again = store.claim_job()
    assert again is not None and again.outcome == {"progress": PROGRESS}
    store.finish_job(job_id, {"added": 2})
    store.keep_job_progress(job_id, {**PROGRESS, "applied": 2})  # done: never written again
    done = store.get_job(ada.team_id, job_id)
    assert done is not None and done.status == "done" and done.outcome == {"added": 2}


def test_a_door_keeps_no_progress_for_a_job_another_door_runs(stores: Callable[..., PostgresStore]) -> None:
    runner, other = stores(), stores()
    ada = store_principal(runner)
    job_id = runner.enqueue_job(ada, "t", "exchange", None)
    assert runner.claim_job() is not None
    other.keep_job_progress(job_id, PROGRESS)
    job = runner.get_job(ada.team_id, job_id)
    assert job is not None and job.outcome is None
    runner.keep_job_progress(job_id, PROGRESS)
    job = runner.get_job(ada.team_id, job_id)
    assert job is not None and job.outcome == {"progress": PROGRESS}
