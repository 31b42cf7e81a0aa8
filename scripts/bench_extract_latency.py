#!/usr/bin/env python3
"""Search latency while another device's extraction backlog runs, beside idle latency, in one run.

    .venv/bin/python scripts/bench_extract_latency.py [--memories 10000] [--jobs 120] [--job-chars 60000]
        [--queries 300] [--embedder none|onnx]

It seeds one space with `--memories` memories (`bench_door.seed`), starts the real `bli-memory-door
serve` with its extraction worker, and times searches of that space from one keep-alive client: first
idle, then while a second device's `--jobs` extract jobs of `--job-chars` characters each (synthetic
exchanges: decisions, paths, commands, a little chatter) wait and run in its own space. Only the
searches answered while jobs were still pending count for the second row; the script says how many
jobs were left when the searches ended (if none were, the backlog was too short for the figure to
mean anything and it says so). Progress goes to stderr; the table to stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import bench_door  # scripts/bench_door.py
import local_door  # scripts/local_door.py

from bli_memory.door.store import open_store

BACKLOG_TAG = "repo_backlog"
QUEUE_TRIES = 5
DONE = "[bli-memory] extract job done "
PARTS = (
    "User: We decided to move the nightly job {n} of `services/worker_{n}.py` to APScheduler; keep 02:{m:02d} UTC.",
    "Assistant: Done. `services/worker_{n}.py` now starts the scheduler on boot, guarded by "
    "`pg_try_advisory_lock({n})`, and `requirements.in` pins `apscheduler==3.10.{m}`.",
    "User: thanks, can you also check why the deploy of service-{n} took so long yesterday?",
    "Assistant: The deploy of service-{n} waited on the migration `0{m}_add_index.py`; run "
    "`make migrate SERVICE={n}` before the rollout from now on. The cache for service-{n} lives in bucket cache-{n}.",
    "<system-reminder>The file `notes/{n}.md` was changed by the user.</system-reminder>",
    "User: Actually the owner of service-{n} is the payments team, not platform.",
)


def exchange(job: int, chars: int) -> str:
    """A synthetic exchange of about `chars` characters, distinct per `job`."""
    rng = random.Random(job)
    out: list[str] = []
    size = 0
    while size < chars:
        part = rng.choice(PARTS).format(n=job * 1000 + len(out), m=rng.randrange(60))
        out.append(part)
        size += len(part) + 2
    return "\n\n".join(out)[:chars]


def pending_jobs(db: Path) -> int:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as conn:
        return int(
            conn.execute(
                "SELECT count(*) FROM memory_extract_jobs WHERE status IN ('queued', 'running')"
            ).fetchone()[0]
        )


def queue_job(host: str, port: int, token: str, body: dict[str, object]) -> int:
    """POST one extract job on a fresh connection; how many tries it took. A door busy with its
    backlog may drop a connection whose 60 KB body it did not read in time (the old build did):
    the job is sent again, up to QUEUE_TRIES times."""
    for attempt in range(1, QUEUE_TRIES + 1):
        conn = http.client.HTTPConnection(host, port, timeout=120)
        try:
            conn.request(
                "POST",
                "/api/memory/save",
                json.dumps(body),
                {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            continue
        finally:
            conn.close()
        if response.status < 300:
            return attempt
    raise SystemExit(f"queueing a job failed {QUEUE_TRIES} times")


def searches_during_backlog(
    conn: http.client.HTTPConnection, token: str, bodies: list[dict[str, object]], db: Path
) -> tuple[list[float], int]:
    """Searches while jobs are pending (at most len(bodies)); how many jobs were left at the end."""
    timings: list[float] = []
    for body in bodies:
        if pending_jobs(db) == 0:
            break
        timings += bench_door.timed_calls(conn, token, "/api/memory/search", [body])
    return timings, pending_jobs(db)


def wait_for_backlog(db: Path, timeout_s: float = 1800.0) -> float:
    started = time.monotonic()
    while pending_jobs(db) and time.monotonic() - started < timeout_s:
        time.sleep(0.2)
    return time.monotonic() - started


def job_times(lines: list[str]) -> tuple[list[float], list[float]]:
    """The extract and the reconcile milliseconds of each job the door's log says is done."""
    extract_ms: list[float] = []
    reconcile_ms: list[float] = []
    for line in lines:
        if line.startswith(DONE):
            fields = json.loads(line[len(DONE) :])
            extract_ms.append(float(fields.get("extract_ms", 0)))
            reconcile_ms.append(float(fields.get("reconcile_ms", 0)))
    return extract_ms, reconcile_ms


def row(name: str, timings: list[float]) -> str:
    if not timings:
        return f"| {name} | 0 | - | - | - |"
    p50 = statistics.median(timings)
    p95 = bench_door.percentile(timings, 0.95)
    return f"| {name} | {len(timings)} | {p50:.2f} | {p95:.2f} | {max(timings):.2f} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=120)
    parser.add_argument("--job-chars", type=int, default=60_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--embedder", default="none")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        token = bench_door.seed(db, args.memories, args.embedder)
        store = open_store(db)
        _, backlog_token = store.create_device(person="backlog", team="local")
        store.close()
        said: list[str] = []
        process, url = local_door.start_door(
            db, None, args.embedder, "bench_extract_latency", worker=True, lines=said
        )
        host, port = url.removeprefix("http://").split(":")
        try:
            conn = http.client.HTTPConnection(host, int(port), timeout=120)
            rng = random.Random(7)
            bodies: list[dict[str, object]] = [
                {"q": bench_door.query(rng), "containerTag": bench_door.TAG} for _ in range(args.queries)
            ]
            bench_door.timed_calls(conn, token, "/api/memory/search", bodies[:20])  # warm the index
            idle = bench_door.timed_calls(conn, token, "/api/memory/search", bodies)
            tries = 0
            for job in range(args.jobs):
                body = {
                    "content": exchange(job, args.job_chars),
                    "containerTag": BACKLOG_TAG,
                    "extract": True,
                }
                tries += queue_job(host, int(port), backlog_token, body)
            cpu_before = bench_door.cpu_seconds(process.pid)
            queued_at = time.monotonic()
            conn.close()  # the door closes a connection idle while the jobs were queued
            busy, left = searches_during_backlog(conn, token, bodies, db)
            wait_for_backlog(db)
            drained_s = time.monotonic() - queued_at
            cpu_s = bench_door.cpu_seconds(process.pid) - cpu_before
        finally:
            local_door.stop_door(process)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"search latency over HTTP, {args.memories:,} memories, embedder {args.embedder}, ms "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {load})"
    )
    print(
        f"backlog: {args.jobs} extract jobs of {args.job_chars:,} characters from another device "
        f"({tries - args.jobs} sent again after the door dropped the connection)"
    )
    print("| phase | searches | p50 | p95 | max |")
    print("|---|---:|---:|---:|---:|")
    print(row("idle", idle))
    print(row("during the backlog", busy))
    print(
        f"jobs still pending when the searches ended: {left}; the backlog ended {drained_s:.1f} s after its last job was queued; "
        f"the door process's CPU meanwhile: {cpu_s:.1f} s (extraction's child process not counted)"
    )
    extract_ms, reconcile_ms = job_times(said)
    if extract_ms:
        print(
            f"per job, ms (the door's log): extract p50 {statistics.median(extract_ms):.0f} "
            f"max {max(extract_ms):.0f}; reconcile and write p50 {statistics.median(reconcile_ms):.0f} "
            f"max {max(reconcile_ms):.0f}"
        )
    if left == 0:
        print("the backlog ended before the searches did: raise --jobs or --job-chars for a fair figure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
