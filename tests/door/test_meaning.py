"""Search by meaning and the librarian, end to end: a real door with the packaged MiniLM model."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.helpers import DoorProcess


def save(door: DoorProcess, tag: str, content: str, **extra: Any) -> dict[str, Any]:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag, **extra})
    assert status in (201, 202), body
    return body


def search(door: DoorProcess, tag: str, q: str, **extra: Any) -> list[dict[str, Any]]:
    status, body = door.post("/api/memory/search", {"q": q, "containerTag": tag, **extra})
    assert status == 200, body
    return body["results"]


FILLER = [
    "The office coffee machine is descaled on Mondays",
    "Frontend components live in src/components and use Tailwind",
    "The CI pipeline runs on GitHub Actions with a 20 minute timeout",
    "Product names are always written in lowercase in the UI",
]


def test_healthz_names_the_model(door_onnx: DoorProcess) -> None:
    status, body = door_onnx.get("/healthz", token="")
    assert status == 200 and body["embedder"].startswith("onnx:")


def test_paraphrase_with_no_shared_keyword_is_found(door_onnx: DoorProcess, tag: str) -> None:
    for text in FILLER:
        save(door_onnx, tag, text)
    save(door_onnx, tag, "Staging deploys happen automatically whenever main is merged")
    results = search(door_onnx, tag, "how do releases reach the test environment?")
    assert results[0]["content"] == "Staging deploys happen automatically whenever main is merged"
    assert results[0]["similarity"] is not None and 0 < results[0]["similarity"] <= 1
    assert results[0]["matchedBy"] == ["vector"]  # no shared word: meaning alone found it
    both = search(door_onnx, tag, "staging deploys")[0]
    assert both["content"].startswith("Staging deploys") and both["matchedBy"] == ["keyword", "vector"]


def test_identifier_query_finds_its_memory(door_onnx: DoorProcess, tag: str) -> None:
    for text in FILLER:
        save(door_onnx, tag, text)
    save(door_onnx, tag, "Raise MAX_POOL_SIZE only together with the database connection limit")
    save(door_onnx, tag, "useAuthStore must be read once per component, never inside loops")
    save(door_onnx, tag, "The flaky login test is tracked as BLI-1234")
    assert search(door_onnx, tag, "MAX_POOL_SIZE")[0]["content"].startswith("Raise MAX_POOL_SIZE")
    assert search(door_onnx, tag, "useAuthStore")[0]["content"].startswith("useAuthStore")
    assert search(door_onnx, tag, "BLI-1234")[0]["content"].endswith("BLI-1234")


def test_newer_fact_outranks_an_equally_relevant_older_one(door_onnx: DoorProcess, tag: str) -> None:
    save(door_onnx, tag, "The team standup is at 9:30 in room Aurora", createdAt="2025-06-01T09:00:00Z")
    save(door_onnx, tag, "The team standup is at 9:30 in room Borealis")
    assert search(door_onnx, tag, "where is the team standup?")[0]["content"].endswith("Borealis")


def test_threshold_filters_on_similarity(door_onnx: DoorProcess, tag: str) -> None:
    for text in FILLER:
        save(door_onnx, tag, text)
    everything = search(door_onnx, tag, "coffee machine cleaning schedule", limit=10)
    assert len(everything) == len(FILLER)
    similarities = [row["similarity"] for row in everything]
    cut = sorted(similarities)[-2]  # keep the two most similar
    kept = search(door_onnx, tag, "coffee machine cleaning schedule", limit=10, threshold=cut)
    assert len(kept) == 2 and all(row["similarity"] >= cut for row in kept)
    assert kept[0]["content"] == "The office coffee machine is descaled on Mondays"


def test_forget_closest_tombstones_the_right_row_and_refuses_below_085(
    door_onnx: DoorProcess, tag: str
) -> None:
    for text in FILLER:
        save(door_onnx, tag, text)
    target = save(door_onnx, tag, "The payments service deploys with Flux")
    status, body = door_onnx.post(
        "/api/memory/forget", {"containerTag": tag, "query": "weekly team lunch menu"}
    )
    assert status == 404 and body["error"] == "no_match" and "needs 0.85" in body["message"]
    status, body = door_onnx.post(
        "/api/memory/forget", {"containerTag": tag, "query": "the payments service deploys using Flux"}
    )
    assert status == 200 and body["match"] == "closest"
    assert body["forgotten"]["id"] == target["id"] and body["forgotten"]["similarity"] >= 0.85
    assert all(
        "Flux" not in row["content"] for row in search(door_onnx, tag, "payments deploys Flux", limit=10)
    )
    assert len(search(door_onnx, tag, "anything at all", limit=10)) == len(FILLER)


EXCHANGE = (
    "User: which database do we run and how is the pool sized?\n\n"
    "Assistant: We run PostgreSQL 16 in production. The connection pool is capped by MAX_POOL_SIZE=20 "
    "in config/database.yml. Run migrations with `make migrate` before deploying."
)


def test_extract_job_adds_facts_and_a_second_identical_exchange_adds_nothing(
    door_onnx: DoorProcess, tag: str
) -> None:
    first = save(door_onnx, tag, EXCHANGE, extract=True)
    assert first["queued"] is True and first["containerTag"] == tag
    job = door_onnx.wait_job(first["jobId"])
    assert job["status"] == "done", job
    outcome = job["outcome"]
    assert outcome["added"] >= 2 and outcome["updated"] == 0
    assert set(outcome) >= {"added", "updated", "unchanged", "conflicted", "extract_ms", "reconcile_ms"}
    door_onnx.wait_for_log(f'[bli-memory] extract job done {{"job": "{first["jobId"]}"')
    stored = search(door_onnx, tag, "database pool size", limit=20)
    assert any("MAX_POOL_SIZE=20" in row["content"] for row in stored)
    facts = [row for row in stored if row["kind"] == "memory"]
    assert facts and all(row["content"] != EXCHANGE for row in facts)  # facts, not the raw turn
    assert all(row["kind"] == "document" for row in stored if row["content"] == EXCHANGE)  # kept apart
    second = door_onnx.wait_job(save(door_onnx, tag, EXCHANGE, extract=True)["jobId"])
    assert second["status"] == "done"
    assert second["outcome"]["added"] == 0 and second["outcome"]["unchanged"] == outcome["added"]
    assert len(search(door_onnx, tag, "database pool size", limit=20)) == len(stored)


def test_a_changed_fact_updates_with_history(door_onnx: DoorProcess, tag: str) -> None:
    door_onnx.wait_job(
        save(door_onnx, tag, "Assistant: We use PostgreSQL 15 in production.", extract=True)["jobId"],
    )
    job = door_onnx.wait_job(
        save(door_onnx, tag, "Assistant: We use PostgreSQL 16 in production.", extract=True)["jobId"],
    )
    assert job["outcome"]["updated"] == 1 and job["outcome"]["added"] == 0
    current = [
        row for row in search(door_onnx, tag, "which PostgreSQL version", limit=10) if row["kind"] == "memory"
    ]
    assert [row["content"] for row in current] == [
        "We use PostgreSQL 16 in production."
    ]  # the exchanges are documents
    status, history = door_onnx.get(f"/api/memory/{current[0]['id']}/history")
    assert status == 200 and [v["content"] for v in history["versions"]] == [
        "We use PostgreSQL 15 in production.",
        "We use PostgreSQL 16 in production.",
    ]


class _HangingLlm(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that never answers: the job stays `running`."""

    def do_POST(self) -> None:
        time.sleep(120)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hanging_llm() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HangingLlm)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_job_survives_a_door_killed_mid_job_and_is_applied_once(
    start_door: Callable[..., DoorProcess], hanging_llm: str
) -> None:
    door = start_door(
        "--embedder", "none", env={"BLI_MEMORY_LLM_URL": hanging_llm, "BLI_MEMORY_LLM_MODEL": "m"}
    )
    queued = save(door, "repo_jobs", EXCHANGE, extract=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _, job = door.get(f"/api/memory/jobs/{queued['jobId']}")
        if job["status"] == "running":
            break
        time.sleep(0.05)
    assert job["status"] == "running"
    door.kill()  # SIGKILL while the librarian waits on the model
    door.extra_env = {}  # restart without the model: the deterministic extractor takes over
    door.start()
    job = door.wait_job(queued["jobId"])
    assert job["status"] == "done" and job["attempts"] == 2 and job["outcome"]["added"] >= 2
    door.wait_for_log("requeued 1 interrupted extract job")
    rows = (
        sqlite3.connect(door.db)
        .execute("SELECT content, count(*) FROM memories WHERE container_tag = 'repo_jobs' GROUP BY content")
        .fetchall()
    )
    assert rows and all(count == 1 for _, count in rows)
    assert sum(1 for _ in rows) == job["outcome"]["added"] + 1  # its facts and the exchange itself


def test_extract_job_outcome_line_has_no_memory_text(door_onnx: DoorProcess, tag: str) -> None:
    job = door_onnx.wait_job(save(door_onnx, tag, EXCHANGE, extract=True)["jobId"])
    line = door_onnx.wait_for_log(f'"job": "{job["id"]}"')
    fields = json.loads(line.split("extract job done ", 1)[1])
    assert set(fields) == {"job", "added", "updated", "unchanged", "conflicted", "extract_ms", "reconcile_ms"}
    assert "PostgreSQL" not in line


class _FailingLlm(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that answers 500."""

    def do_POST(self) -> None:
        self.send_response(500)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_failing_llm_falls_back_to_the_deterministic_extractor(
    start_door: Callable[..., DoorProcess],
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FailingLlm)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        door = start_door(
            "--embedder",
            "none",
            env={
                "BLI_MEMORY_LLM_URL": url,
                "BLI_MEMORY_LLM_MODEL": "m",
                "BLI_MEMORY_LLM_KEY": "sk-secret-key",
            },
        )
        door.wait_for_log("librarian: LLM extractor (m) with deterministic fallback")
        job = door.wait_job(save(door, "repo_llm", EXCHANGE, extract=True)["jobId"])
        assert job["status"] == "done" and job["outcome"]["added"] >= 2
        door.wait_for_log("used the deterministic one")
        assert not any("sk-secret-key" in line for line in door.lines)
    finally:
        server.shutdown()
