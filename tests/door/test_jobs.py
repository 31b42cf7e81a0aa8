"""Extract jobs are bounded per device (429 `queue_full` past the cap), and revoking a device cancels
its waiting and running jobs: nothing is written for them afterwards. A real door, with a stand-in
LLM endpoint that holds each extraction until the test lets it go (so jobs stay pending on demand)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.helpers import BIN, DoorProcess, served_locally

DOOR = str(BIN / "bli-memory-door")
HOLD_S = 15.0
FACT = "Fact {n}: the build cache for service-{n} lives in bucket cache-{n} and expires after {n} days."


class _HeldLlm(BaseHTTPRequestHandler):
    """Answers 503 (the door then falls back to its deterministic extractor), but only once
    `release` is set: until then the job that asked stays `running`."""

    reached: threading.Event
    release: threading.Event

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reached.set()
        self.release.wait(HOLD_S)
        body = b'{"error": "held"}'
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def held_llm() -> Iterator[tuple[str, type[_HeldLlm]]]:
    handler = type("Held", (_HeldLlm,), {"reached": threading.Event(), "release": threading.Event()})
    with served_locally(handler) as url:
        yield url, handler
        handler.release.set()  # a held request lets go before the shutdown


def _door_with_held_llm(start_door: Callable[..., DoorProcess], url: str, **env: str) -> DoorProcess:
    return start_door(
        "--embedder", "none", env={"BLI_MEMORY_LLM_URL": url, "BLI_MEMORY_LLM_MODEL": "m", **env}
    )


def _queue(door: DoorProcess, token: str, tag: str, n: int) -> tuple[int, Any]:
    return door.post(
        "/api/memory/save", {"content": FACT.format(n=n), "containerTag": tag, "extract": True}, token
    )


def _device_id(door: DoorProcess, person: str) -> str:
    listing = subprocess.run(
        [DOOR, "tokens", "list", "--json", "--db", str(door.db)],
        capture_output=True,
        text=True,
        env=door.env(),
        timeout=60,
        check=True,
    )
    return next(row["id"] for row in json.loads(listing.stdout) if row["person"] == person)


def _wait_until_no_job_is_pending(door: DoorProcess, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    with closing(sqlite3.connect(door.db)) as db:
        while time.monotonic() < deadline:
            pending = db.execute(
                "SELECT count(*) FROM memory_extract_jobs WHERE status IN ('queued', 'running')"
            ).fetchone()[0]
            if pending == 0:
                return
            time.sleep(0.05)
    raise AssertionError(f"jobs still pending after {timeout_s} s")


def test_a_device_past_its_queue_cap_gets_429_and_other_devices_do_not(
    start_door: Callable[..., DoorProcess], held_llm: tuple[str, type[_HeldLlm]]
) -> None:
    url, llm = held_llm
    door = _door_with_held_llm(start_door, url, BLI_MEMORY_MAX_PENDING_JOBS="3")
    busy = door.pair("busy")
    other = door.pair("busy")  # the same person's other device has a queue of its own
    for n in range(3):
        status, body = _queue(door, busy, "repo_cap", n)
        assert status == 202, body
    status, body = _queue(door, busy, "repo_cap", 3)
    assert status == 429
    assert body["error"] == "queue_full" and "3 extract jobs waiting" in body["message"]
    status, _ = _queue(door, other, "repo_cap", 4)
    assert status == 202
    llm.release.set()  # the jobs finish; the device may queue again
    _wait_until_no_job_is_pending(door)
    status, _ = _queue(door, busy, "repo_cap", 5)
    assert status == 202


def test_a_bad_cap_is_one_line_and_exit_2(start_door: Callable[..., DoorProcess]) -> None:
    with pytest.raises(RuntimeError, match="BLI_MEMORY_MAX_PENDING_JOBS must be a whole number"):
        start_door("--embedder", "none", env={"BLI_MEMORY_MAX_PENDING_JOBS": "lots"})


def test_revoking_a_device_cancels_its_jobs_and_nothing_is_written_for_them(
    start_door: Callable[..., DoorProcess], held_llm: tuple[str, type[_HeldLlm]]
) -> None:
    url, llm = held_llm
    door = _door_with_held_llm(start_door, url)
    person = f"leaver-{uuid.uuid4().hex[:8]}"
    leaver = door.pair(person)
    jobs = []
    for n in range(6):
        status, body = _queue(door, leaver, "repo_revoke", n)
        assert status == 202, body
        jobs.append(body["jobId"])
    assert llm.reached.wait(HOLD_S)  # the first job is running, held at the LLM; five are queued
    device = _device_id(door, person)
    revoked = subprocess.run(
        [DOOR, "tokens", "revoke", device, "--db", str(door.db)],
        capture_output=True,
        text=True,
        env=door.env(),
        timeout=60,
    )
    assert revoked.returncode == 0, revoked.stderr
    assert "cancelled its 6 waiting extract job(s)" in revoked.stdout
    llm.release.set()  # the running job now extracts its facts (deterministic fallback) ...
    door.wait_for_log(f'extract job cancelled {{"job": "{jobs[0]}"}}', timeout_s=30)  # ... and drops them
    for job_id in jobs:
        status, body = door.get(f"/api/memory/jobs/{job_id}")  # another device of the team asks
        assert status == 200
        assert body["status"] == "cancelled" and "revoked" in body["error"]
    written = sqlite3.connect(door.db).execute("SELECT count(*) FROM memories WHERE device_id = ?", (device,))
    assert written.fetchone()[0] == 0
    assert not any("extract job done" in line for line in door.lines)
