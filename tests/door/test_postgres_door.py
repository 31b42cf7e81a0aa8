"""The door over PostgreSQL, as a process: what it says at start (the server's version, never the
password), how it refuses a database it cannot open, and how it lives through lost connections."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.helpers import BIN, DoorProcess, PostgresServer

#: how long the door may take to serve again after its connections were dropped.
RECOVERY_S = 10.0


def _with_password(url: str, password: str) -> str:
    return url.replace("postgres:@", f"postgres:{password}@", 1)


def test_the_start_line_and_healthz_name_the_server_and_never_the_password(
    start_door: Callable[..., DoorProcess], postgres: PostgresServer
) -> None:
    door = start_door(store="postgresql")
    door.stop()
    door.db = _with_password(str(door.db), "hunter2-secret")  # the test server trusts local connections
    door.start()
    start_line = door.wait_for_log(": store postgresql ")
    assert "store postgresql 16." in start_line and "postgres:***@" in start_line
    status, health = door.get("/healthz", token="")
    assert status == 200 and health["store"] == "postgresql" and health["storeVersion"].startswith("16.")
    status, _ = door.post("/api/memory/save", {"content": "a first memory", "containerTag": "t"})
    assert status == 201
    listing = subprocess.run(
        [str(BIN / "bli-memory-door"), "tokens", "list", "--db", str(door.db)],
        capture_output=True,
        text=True,
        env=door.env(),
        timeout=60,
    )
    assert listing.returncode == 0 and "tester" in listing.stdout
    door.stop()
    assert not any("hunter2" in line for line in door.lines)


def _serve(db: str, home: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "bli-memory-door"), "serve", "--port", "0", "--no-autopair", "--db", db],
        capture_output=True,
        text=True,
        env={"HOME": home, "PATH": "/usr/bin:/bin"},
        timeout=60,
    )


def test_a_database_that_cannot_be_opened_is_one_line_without_the_password(tmp_path: Path) -> None:
    unreachable = _serve("postgresql://ada:hunter2-secret@127.0.0.1:1/memory", str(tmp_path))
    assert unreachable.returncode == 1
    assert (
        unreachable.stderr.count("\n") == 1
        and "cannot connect to postgresql://ada:***@127.0.0.1:1" in unreachable.stderr
    )
    malformed = _serve("postgresql://ada:hunter2-secret@host/memory?bogus=1", str(tmp_path))
    assert malformed.returncode == 2
    assert malformed.stderr.count("\n") == 1 and "not a valid PostgreSQL URL" in malformed.stderr
    for done in (unreachable, malformed):
        assert "hunter2" not in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_dropped_connections_fail_a_request_with_503_and_the_next_ones_work(
    start_door: Callable[..., DoorProcess], postgres: PostgresServer
) -> None:
    door = start_door("--embedder", "none", "--no-worker", store="postgresql")
    status, _ = door.post("/api/memory/save", {"content": "saved before the drop", "containerTag": "t"})
    assert status == 201
    database = str(door.db).split("?")[0].rsplit("/", 1)[1]
    dropped = postgres.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (database,),
    )
    assert dropped and all(row[0] for row in dropped)
    status, answer = door.post("/api/memory/search", {"q": "saved", "containerTag": "t"})
    assert status == 503 and answer["error"] == "store_unavailable" and answer["message"], answer
    deadline = time.monotonic() + RECOVERY_S
    while status != 200 and time.monotonic() < deadline:
        status, answer = door.post("/api/memory/search", {"q": "saved", "containerTag": "t"})
        time.sleep(0.05)
    assert status == 200 and [row["content"] for row in answer["results"]] == ["saved before the drop"]
    status, _ = door.post("/api/memory/save", {"content": "saved after the drop", "containerTag": "t"})
    assert status == 201
    door.wait_for_log("bli-memory-door store unavailable: postgresql 16.")
    assert door.process is not None and door.process.poll() is None


def test_stop_and_the_pid_file_are_for_sqlite_files_only(
    start_door: Callable[..., DoorProcess], postgres: PostgresServer
) -> None:
    first = start_door(store="postgresql")
    second = DoorProcess(first.db, first.home, ["--embedder", "none"])  # two doors, one database
    try:
        assert second.get("/healthz", token="")[0] == 200
        stop = subprocess.run(
            [str(BIN / "bli-memory-door"), "stop", "--db", str(first.db)],
            capture_output=True,
            text=True,
            env=first.env(),
            timeout=60,
        )
        assert stop.returncode == 1 and "SIGTERM" in stop.stderr and stop.stderr.count("\n") == 1
    finally:
        second.kill()


def test_a_bad_job_lease_is_one_line_and_exit_2(postgres: PostgresServer, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            str(BIN / "bli-memory-door"),
            "serve",
            "--port",
            "0",
            "--no-autopair",
            "--db",
            postgres.database_for(tmp_path),
        ],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "BLI_MEMORY_JOB_LEASE_S": "forever"},
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "BLI_MEMORY_JOB_LEASE_S must be a number of seconds" in done.stderr
