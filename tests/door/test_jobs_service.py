"""The extraction worker reaches the store only through the memory service: with the service's own
`store` attribute made unusable, a worker still claims a job, writes its facts and its exchange,
marks it done and runs its retention sweeps."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from bli_memory.door.jobs import ExtractionWorker
from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore
from tests.door.helpers import device_principal

FACTS = ["The billing service retries against Kafka.", "Deploys run from the main branch only."]


class _Untouchable:
    """Stands in for the service's `store` attribute: any use of it fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the worker used the store directly ({name})")


def _facts(_text: str) -> tuple[list[str], str]:
    return list(FACTS), "rules"


def test_the_worker_runs_a_job_and_its_sweeps_through_the_service_alone(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    memories = MemoryService(store)
    principal = device_principal(memories)
    job_id, _tag = memories.enqueue_job(principal, "repo_b", "User: how do we deploy?", None)
    memories.store = _Untouchable()  # type: ignore[assignment]
    log = io.StringIO()
    worker = ExtractionWorker(memories, log=log)
    worker.extract = _facts
    worker._drain()
    worker.extractor.close()
    assert "extract job done" in log.getvalue()
    done = memories.get_job(principal, job_id)
    assert done.status == "done" and done.outcome is not None and done.outcome["added"] == len(FACTS)
    hits = memories.search(principal, "repo_b", "billing retries Kafka", limit=3)
    assert [hit.memory.content for hit in hits][:1] == [FACTS[0]]
    store.close()
