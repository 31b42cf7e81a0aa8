"""scripts/bench_doors.py end to end, small: 200 memories, 1 s of load per run from 4 clients against one
door and then two over one PostgreSQL database (the tests' server, the script making a database of
its own there). Every request answers 2xx, every save is found at once through the other door, and
the run's database is dropped at the end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "bench_doors.py"
RUN_TIMEOUT_S = 120.0


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def cells(output: str, name: str) -> list[float]:
    line = next(line for line in output.splitlines() if line.startswith(f"| {name} |"))
    return [float(cell) for cell in line.strip("|").split("|")[1:]]


def test_one_door_and_two_answer_a_mixed_load_and_read_their_writes(tmp_path: Path, postgres: Any) -> None:
    done = bench(tmp_path, "--db", postgres.url, "--memories", "200", "--duration", "1", "--clients", "4")
    assert done.returncode == 0, done.stderr
    assert "| | one door | two doors |" in done.stdout
    assert "200 memories in one space, embedder none, 4 clients for 1 s each" in done.stdout
    for rate in cells(done.stdout, "requests/s"):
        assert rate > 0
    assert cells(done.stdout, "errors (not 2xx, or no answer)") == [0, 0]
    assert all(count > 0 for count in cells(done.stdout, "read-your-writes checks"))
    assert cells(done.stdout, "read-your-writes failures") == [0, 0]
    for p50, p95 in zip(
        cells(done.stdout, "search p50 ms"), cells(done.stdout, "search p95 ms"), strict=True
    ):
        assert 0 < p50 <= p95
    assert postgres.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", ("bench_doors_%",)) == []


def test_arguments_it_cannot_use_are_refused_before_anything_starts(tmp_path: Path) -> None:
    for args, says in (
        (["--db", "memory.db"], "--db takes pgserver or a postgresql:// URL"),
        (["--search-share", "1"], "--search-share"),
        (["--clients", "0"], "--clients 1 or more"),
        (["--embedder", "openai"], "invalid choice: 'openai'"),
    ):
        done = bench(tmp_path, *args)
        assert done.returncode == 2, args
        assert says in done.stderr.splitlines()[-1], done.stderr
        assert "Traceback" not in done.stderr
