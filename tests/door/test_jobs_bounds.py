"""A job's extraction is bounded and kept off the door's threads, and its writes hold the door's
lock one fact at a time: a job over its CPU budget fails with that reason while the queue goes on,
the rules run in a child process of the door, a job retried after an error goes on after the facts
it applied (each once), and a search asked while a job writes is answered between its facts."""

from __future__ import annotations

import io
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bli_memory.door.config import LlmConfig
from bli_memory.door.embed import load_embedder
from bli_memory.door.extraction import ExtractorProcess, OverBudget
from bli_memory.door.jobs import ExtractionWorker, run_job
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Job
from bli_memory.door.store.sqlite import SqliteStore
from tests.door.helpers import device_principal
from tests.helpers import BIN, DoorProcess

DOOR = str(BIN / "bli-memory-door")
#: about 0.15 s of CPU for the rule-based librarian on the development machine (5 x the budget below)
#: exchanges of several shapes the librarian reads: a decision, an answer with a pronoun, a fix
#: beside a traceback and a code dump
SAMPLES = (
    "User: We decided to use Postgres 16 instead of MySQL. Please always use pnpm, not npm.\n\n"
    "Assistant: Got it. I'll remember that.",
    "User: what does the `sync` job do?\n\nAssistant: It copies rows from prod to staging every "
    "night at 02:00 UTC. It is defined in `jobs/sync.py`.",
    "User: the build is failing\n\nAssistant: Let me look at the error.\n\n```\n"
    'Traceback (most recent call last):\n  File "x.py", line 3\n'
    "ModuleNotFoundError: No module named 'numpy'\n```\n\n"
    "The fix was to pin numpy<2 in requirements.txt because onnxruntime 1.17 does not support "
    "numpy 2. I've updated `requirements.txt` accordingly.\n\nAll tests pass now.",
)
LARGE = ("\n\n".join(f"{text} (part {n})" for n in range(400) for text in SAMPLES))[:100_000]
SMALL = SAMPLES[0]  # well under a millisecond
BUDGET_S = "0.03"
FACTS = [f"The cache of service-{n} lives in bucket cache-{n} and expires after {n} days." for n in range(12)]


def _wait_for_jobs(door: DoorProcess, timeout_s: float = 60.0) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = door.rows("SELECT id, status, error, attempts FROM memory_extract_jobs ORDER BY created_at")
        if rows and all(row[1] not in ("queued", "running") for row in rows):
            return rows
        time.sleep(0.05)
    raise AssertionError("jobs still pending")


def _queue(door: DoorProcess, content: str) -> str:
    status, body = door.post(
        "/api/memory/save", {"content": content, "containerTag": "repo_b", "extract": True}
    )
    assert status == 202, body
    return str(body["jobId"])


def test_a_job_over_its_cpu_budget_fails_with_its_reason_and_the_queue_goes_on(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "none", env={"BLI_MEMORY_JOB_CPU_S": BUDGET_S})
    large = _queue(door, LARGE)
    small = _queue(door, SMALL)
    statuses = {row[0]: row[1:] for row in _wait_for_jobs(door)}
    assert statuses[large] == ("failed", f"stopped: extraction used more than {BUDGET_S} s of CPU", 1)
    assert statuses[small][0] == "done"
    status, found = door.post("/api/memory/search", {"q": "Postgres 16", "containerTag": "repo_b"})
    assert status == 200 and any(
        hit["content"] == "We decided to use Postgres 16 instead of MySQL." for hit in found["results"]
    )
    over = [line for line in door.lines if "over its CPU budget" in line]
    assert len(over) == 1 and large in over[0] and "Traceback" not in "\n".join(door.lines)


def test_a_bad_cpu_budget_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for bad in ("0", "-1", "nan", "lots"):
        done = subprocess.run(
            [DOOR, "serve", "--db", str(tmp_path / "m.db"), "--port", "0", "--no-autopair"],
            capture_output=True,
            text=True,
            env={**os.environ, "HOME": str(tmp_path), "BLI_MEMORY_JOB_CPU_S": bad},
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().count("\n") == 0 and "BLI_MEMORY_JOB_CPU_S" in done.stderr


def test_the_rules_run_in_a_child_process_of_the_door(start_door: Callable[..., DoorProcess]) -> None:
    door = start_door()
    _queue(door, SMALL)
    _wait_for_jobs(door)
    assert door.process is not None
    tasks = Path(f"/proc/{door.process.pid}/task")  # a child is listed under the thread that started it
    children = [pid for task in tasks.iterdir() for pid in (task / "children").read_text().split()]
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ") for pid in children]
    assert any(b"bli_memory.door.extraction" in command for command in commands), commands


def test_a_child_over_budget_is_replaced_for_the_next_job() -> None:
    extractor = ExtractorProcess(LlmConfig(), cpu_s=float(BUDGET_S))
    try:
        raised = None
        try:
            extractor(LARGE)
        except OverBudget as exc:
            raised = exc
        assert raised is not None and str(raised) == f"extraction used more than {BUDGET_S} s of CPU"
        facts, by = extractor(SMALL)
        assert by == "deterministic" and "We decided to use Postgres 16 instead of MySQL." in facts
    finally:
        extractor.close()


class _FailOnce(SqliteStore):
    """A store whose keeping of a job's progress fails once, at the `fail_at`-th fact: the error
    a job meets halfway (a full disk, a lost connection), on demand."""

    fail_at = 0
    kept = 0

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        self.kept += 1
        if self.kept == self.fail_at:
            raise OSError("disk I/O error")
        super().keep_job_progress(job_id, progress)


def _facts(_text: str) -> tuple[list[str], str]:
    return list(FACTS), "deterministic"


def test_a_job_retried_after_an_error_goes_on_after_the_facts_it_applied(tmp_path: Path) -> None:
    store = _FailOnce(tmp_path / "m.db")
    store.fail_at = 5
    memories = MemoryService(store)
    principal = device_principal(memories)
    job_id = store.enqueue_job(principal, "repo_b", "the exchange", None)
    worker = ExtractionWorker(memories, log=io.StringIO())
    worker.extract = _facts
    first = store.claim_job()
    assert first is not None
    worker._process(first)  # fails at the fifth fact; the four before it are kept
    retried = store.claim_job()
    assert retried is not None and retried.id == job_id and retried.attempts == 2
    assert retried.outcome is not None and retried.outcome["progress"]["applied"] == 4
    calls: list[str] = []

    def counted(text: str) -> tuple[list[str], str]:
        calls.append(text)
        return _facts(text)

    outcome = run_job(memories, retried, counted)
    assert calls == []  # the facts kept with the progress, not extracted again
    assert outcome is not None and outcome.added == len(FACTS) and outcome.unchanged == 0
    texts = [
        row[0]
        for row in store._db.execute(
            "SELECT content FROM memories WHERE status = 'current' AND kind = 'memory' ORDER BY created_at"
        ).fetchall()
    ]
    assert sorted(texts) == sorted(FACTS)  # each fact once
    done = store.get_job(principal.team_id, job_id)
    assert done is not None and done.status == "done" and done.outcome is not None
    assert done.outcome["added"] == len(FACTS)
    memories.close()


class _Watched(SqliteStore):
    """Starts `search` on a thread when the job keeps its first fact's progress (inside that fact's
    transaction: the search then waits for the lock), and notes at the job's `done` mark whether
    that search was answered."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.search: Callable[[], None] | None = None
        self.answered = threading.Event()
        self.answered_before_done: bool | None = None

    def keep_job_progress(self, job_id: str, progress: dict[str, Any]) -> None:
        if self.search is not None:
            threading.Thread(target=self.search, daemon=True).start()
            self.search = None
        super().keep_job_progress(job_id, progress)

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None:
        self.answered_before_done = self.answered.is_set()
        super().finish_job(job_id, outcome)


def test_a_search_asked_while_a_job_writes_is_answered_between_its_facts(tmp_path: Path) -> None:
    store = _Watched(tmp_path / "m.db")
    memories = MemoryService(store)
    principal = device_principal(memories)
    memories.save(principal, "repo_b", "The billing service retries against Kafka.")

    def search() -> None:
        memories.search(principal, "repo_b", "billing retries")
        store.answered.set()

    store.search = search
    store.enqueue_job(principal, "repo_b", "the exchange", None)
    job: Job | None = store.claim_job()
    assert job is not None
    outcome = run_job(memories, job, _facts)
    assert outcome is not None and outcome.added == len(FACTS)
    assert store.answered_before_done is True  # not held until the whole job had committed
    memories.close()


class _LockWatch:
    """The door's real embedder, noting for each text it embeds whether the memory service's lock
    (the one searches wait for) was held by the caller."""

    def __init__(self, inner: Any, memories: MemoryService) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.memories = memories
        self.under_lock: list[str] = []

    def embed(self, texts: Any, *, kind: Any) -> Any:
        if self.memories.writer.lock._is_owned():  # type: ignore[attr-defined]
            self.under_lock += list(texts)
        return self.inner.embed(texts, kind=kind)


def test_a_jobs_facts_are_embedded_before_the_lock_searches_wait_for(tmp_path: Path) -> None:
    embedder, warning = load_embedder("onnx", env={})
    assert warning is None
    store = SqliteStore(tmp_path / "m.db")
    memories = MemoryService(store)
    watch = _LockWatch(embedder, memories)
    memories.embedder = watch
    principal = device_principal(memories)
    memories.save(principal, "repo_b", "The billing service retries against Kafka.")
    store.enqueue_job(principal, "repo_b", "the exchange", None)
    job = store.claim_job()
    assert job is not None
    outcome = run_job(memories, job, _facts)
    assert outcome is not None and outcome.added == len(FACTS)
    assert [text for text in watch.under_lock if text in FACTS] == []
    hits = memories.search(principal, "repo_b", FACTS[3], limit=1)
    assert hits and hits[0].memory.content == FACTS[3] and hits[0].similarity is not None
    memories.close()
