"""scripts/bench_door_changes.py end to end, small: 300 memories and 3 rounds on the tests' PostgreSQL
server (the script making a database of its own there). Each door finds the memory just saved on
the other, the door that applies changes in place builds the space once, the one that drops its
indexes rebuilds it after every save, and the run's database is dropped at the end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "bench_door_changes.py"
RUN_TIMEOUT_S = 120.0


def test_the_in_place_door_builds_once_and_the_rebuilding_one_after_every_save(
    tmp_path: Path, postgres: Any
) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--db", postgres.url, "--memories", "300", "--rounds", "3"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "| | in place (change log) | drop and rebuild (before) |" in done.stdout
    assert "300 memories in one space, no embedder, 3 rounds" in done.stdout
    assert "| keyword indexes built | 1 | 4 |" in done.stdout
    after = next(
        line for line in done.stdout.splitlines() if line.startswith("| first search after A's save |")
    )
    assert after.count(" ms (") == 2
    databases = postgres.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE %s", ("bench_changes_%",)
    )
    assert databases == []
