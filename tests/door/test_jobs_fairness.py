"""The door's extraction worker goes round the devices with jobs waiting: a device that queued after
another device's backlog has its job taken second, not after the whole backlog (the store's side,
on both stores: tests/door/store/test_jobs_fairness.py)."""

from __future__ import annotations

import io
import time
from pathlib import Path

from bli_memory.door.jobs import ExtractionWorker
from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore
from tests.door.helpers import store_principal

EXCHANGE = "User: We decided that service-{n} keeps its cache in bucket cache-{n} for {n} days."


def test_the_worker_takes_a_later_device_s_job_before_the_rest_of_a_backlog(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.db")
    first, second = sorted(
        [store_principal(store, "ann"), store_principal(store, "ben")], key=lambda p: p.device_id
    )
    backlog = [store.enqueue_job(first, "repo_a", EXCHANGE.format(n=n), None) for n in range(5)]
    late = store.enqueue_job(second, "repo_b", EXCHANGE.format(n=99), None)
    worker = ExtractionWorker(MemoryService(store), log=io.StringIO())
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with store._lock:
                pending = store._db.execute(
                    "SELECT count(*) FROM memory_extract_jobs WHERE status IN ('queued', 'running')"
                ).fetchone()[0]
            if pending == 0:
                break
            time.sleep(0.05)
        with store._lock:
            order = [
                row[0]
                for row in store._db.execute(
                    "SELECT id FROM memory_extract_jobs WHERE status = 'done' ORDER BY started_at, rowid"
                ).fetchall()
            ]
    finally:
        worker.stop()
        store.close()
    assert order == [backlog[0], late, *backlog[1:]]
