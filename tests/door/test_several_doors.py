"""Two door processes over one PostgreSQL database: what one acknowledges the other finds at once,
they share the extraction queue without running a job twice, a door killed mid-job loses nothing,
and both live through a restart of the server."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.helpers import DoorProcess, PostgresServer, served_locally

#: a lease short enough for a test to see a killed door's job taken over.
LEASE_S = "1.5"
HOLD_S = 20.0
FACT = "Fact {n}: the build cache for service-{n} lives in bucket cache-{n} and expires after {n} days."


@pytest.fixture
def two_doors(start_door: Callable[..., DoorProcess]) -> tuple[DoorProcess, DoorProcess]:
    # one folder, so one database: the second door serves the first one's
    first = start_door("--embedder", "none", store="postgresql", env={"BLI_MEMORY_JOB_LEASE_S": LEASE_S})
    second = start_door("--embedder", "none", store="postgresql", env={"BLI_MEMORY_JOB_LEASE_S": LEASE_S})
    assert second.db == first.db
    return first, second


def test_a_save_acknowledged_by_one_door_is_found_by_the_other_at_once(
    two_doors: tuple[DoorProcess, DoorProcess],
) -> None:
    doors = list(two_doors)
    tag = f"shared_{uuid.uuid4().hex[:8]}"
    misses: list[str] = []

    def writer(number: int) -> None:
        for index in range(15):
            saver, searcher = doors[(number + index) % 2], doors[(number + index + 1) % 2]
            word = f"w{number}x{index}q{uuid.uuid4().hex[:6]}"
            status, _ = saver.post("/api/memory/save", {"content": f"note {word}", "containerTag": tag})
            assert status == 201
            status, found = searcher.post("/api/memory/search", {"q": word, "containerTag": tag})
            if status != 200 or [row["content"] for row in found["results"]] != [f"note {word}"]:
                misses.append(word)

    threads = [threading.Thread(target=writer, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert misses == []
    for door in doors:
        status, found = door.post("/api/memory/search", {"q": "note", "containerTag": tag, "limit": 100})
        assert status == 200 and len(found["results"]) == 60


def test_the_doors_share_the_queue_and_run_each_job_once(two_doors: tuple[DoorProcess, DoorProcess]) -> None:
    first, second = two_doors
    tag = f"jobs_{uuid.uuid4().hex[:8]}"
    jobs = []
    for n in range(16):
        door = (first, second)[n % 2]
        status, body = door.post(
            "/api/memory/save", {"content": FACT.format(n=n), "containerTag": tag, "extract": True}
        )
        assert status == 202, body
        jobs.append(body["jobId"])
    for job_id in jobs:
        job = first.wait_job(job_id)
        assert job["status"] == "done" and job["attempts"] == 1, job
    ran = [line for door in two_doors for line in door.lines if "extract job done" in line]
    assert sorted(job_id for job_id in jobs if any(job_id in line for line in ran)) == sorted(jobs)
    assert len(ran) == len(jobs)  # no job ran twice
    [(exchanges,)] = first.rows(
        "SELECT count(*) FROM memories WHERE container_tag = ? AND kind = 'document' AND status = 'current'",
        (tag,),
    )
    assert exchanges == len(jobs)


class _HeldLlm(BaseHTTPRequestHandler):
    """Holds the request of the job that reached it (its door is then mid-job) until the test ends."""

    reached: threading.Event
    release: threading.Event

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reached.set()
        self.release.wait(HOLD_S)
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def held_llm() -> Iterator[tuple[str, type[_HeldLlm]]]:
    handler = type("Held", (_HeldLlm,), {"reached": threading.Event(), "release": threading.Event()})
    with served_locally(handler) as url:
        yield url, handler
        handler.release.set()


def test_a_door_killed_mid_job_loses_nothing_another_door_finishes_it(
    start_door: Callable[..., DoorProcess], held_llm: tuple[str, type[_HeldLlm]]
) -> None:
    url, llm = held_llm
    lease = {"BLI_MEMORY_JOB_LEASE_S": LEASE_S}
    doomed = start_door(
        "--embedder",
        "none",
        store="postgresql",
        env={**lease, "BLI_MEMORY_LLM_URL": url, "BLI_MEMORY_LLM_MODEL": "m"},
    )
    tag = f"killed_{uuid.uuid4().hex[:8]}"
    status, body = doomed.post(
        "/api/memory/save", {"content": FACT.format(n=7), "containerTag": tag, "extract": True}
    )
    assert status == 202
    assert llm.reached.wait(HOLD_S)  # the doomed door runs the job, held at the LLM
    survivor = start_door("--embedder", "none", store="postgresql", env=lease)  # the same database
    assert not any("requeued" in line for line in survivor.lines)  # a live door's job is not taken
    doomed.kill()  # SIGKILL, mid-job
    job = survivor.wait_job(body["jobId"], timeout_s=30)
    assert job["status"] == "done" and job["attempts"] == 2
    [(facts,)] = survivor.rows(
        "SELECT count(*) FROM memories WHERE container_tag = ? AND kind = 'memory' AND status = 'current'",
        (tag,),
    )
    assert facts >= 1
    [(exchanges,)] = survivor.rows(
        "SELECT count(*) FROM memories WHERE container_tag = ? AND kind = 'document'", (tag,)
    )
    assert exchanges == 1  # applied once


def test_the_doors_live_through_a_restart_of_the_server_and_lose_no_acknowledged_write(
    two_doors: tuple[DoorProcess, DoorProcess], postgres: PostgresServer
) -> None:
    doors = list(two_doors)
    tag = f"restart_{uuid.uuid4().hex[:8]}"
    acknowledged: list[str] = []
    refused: list[int] = []
    stop = threading.Event()

    def load(number: int) -> None:
        index = 0
        while not stop.is_set():
            content = f"written by client {number} as number {index}"
            status, answer = doors[number % 2].post(
                "/api/memory/save", {"content": content, "containerTag": tag}
            )
            if status == 201:
                acknowledged.append(content)
            else:
                assert status == 503 and answer["error"] == "store_unavailable", answer
                refused.append(status)
            index += 1
            time.sleep(0.01)

    threads = [threading.Thread(target=load, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    before = len(acknowledged)
    [(started,)] = postgres.execute("SELECT pg_postmaster_start_time()")
    postgres.restart()
    assert postgres.execute("SELECT pg_postmaster_start_time()") != [(started,)]
    time.sleep(1.0)
    deadline = time.monotonic() + 20
    while len(acknowledged) < before + 40 and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert before > 0 and len(acknowledged) >= before + 40  # both doors write again after the restart
    stored = {row[0] for row in doors[0].rows("SELECT content FROM memories WHERE container_tag = ?", (tag,))}
    assert set(acknowledged) <= stored
    for door in doors:
        assert door.process is not None and door.process.poll() is None
        status, _ = door.get("/healthz", token="")
        assert status == 200
