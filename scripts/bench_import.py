#!/usr/bin/env python3
"""Import speed: `bli-memory-mcp import` of an instruction file of N bullets into a fresh door, with
the door's embedder off and with the packaged model, side by side in one run.

    .venv/bin/python scripts/bench_import.py [--records 1000] [--embedders none,onnx]

Each embedder gets its own door over a temporary SQLite file. The first import saves every record
(one request each, so a record is embedded as it is saved when the door has a model); the second
import of the same file finds every record already there (`unchanged`). Prints memories per second
for both, and the load average, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import local_door  # scripts/local_door.py

BIN = Path(sys.executable).parent
IMPORT_TIMEOUT_S = 3600.0
SUBJECTS = (
    "the billing worker",
    "the search API",
    "CI",
    "the deploy script",
    "the ledger service",
    "staging",
)
VERBS = ("retries", "logs", "caches", "pins", "rotates", "exports", "checks")
OBJECTS = (
    "failed webhooks",
    "its tokens",
    "the schema",
    "nightly builds",
    "the audit trail",
    "TLS certificates",
)


def bullet(rng: random.Random, index: int) -> str:
    """A distinct convention-like line, the shape an instruction file holds."""
    return (
        f"- {rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
        f"every {rng.randint(2, 90)} minutes (rule {index})."
    )


def start_door(db: Path, home: Path, embedder: str) -> tuple[subprocess.Popen[str], str]:
    return local_door.start_door(db, home, embedder, "bench_import")


def pair(db: Path, home: Path) -> str:
    done = subprocess.run(
        [str(BIN / "bli-memory-door"), "pair", "--person", "bench", "--db", str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(home)},
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def timed_import(path: Path, home: Path, url: str, token: str) -> tuple[float, dict[str, object]]:
    env = {
        **os.environ,
        "HOME": str(home),
        "BLI_MEMORY_DASHBOARD_URL": url,
        "BLI_MEMORY_DEVICE_TOKEN": token,
        "BLI_MEMORY_DAEMON": "0",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [str(BIN / "bli-memory-mcp"), "import", "instructions", str(path), "--space", "bench", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=IMPORT_TIMEOUT_S,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_import: import failed: {done.stderr.strip()}")
    return elapsed, json.loads(done.stdout)


def bench(records: int, embedder: str, folder: Path) -> dict[str, float]:
    rng = random.Random(7)
    notes = folder / "MEMORY.md"
    notes.write_text("# Conventions\n\n" + "\n".join(bullet(rng, i) for i in range(records)) + "\n")
    home = folder / "home"
    home.mkdir()
    db = folder / "memory.db"
    process, url = start_door(db, home, embedder)
    try:
        token = pair(db, home)
        first_s, first = timed_import(notes, home, url, token)
        second_s, second = timed_import(notes, home, url, token)
    finally:
        process.terminate()
        process.wait(timeout=30)
    if first["imported"] != records or second["unchanged"] != records:
        raise SystemExit(f"bench_import: unexpected counts {first} / {second}")
    return {"first_s": first_s, "second_s": second_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000, help="bullets in the file (default 1000)")
    parser.add_argument("--embedders", default="none,onnx", help="comma-separated: none, onnx (default both)")
    args = parser.parse_args()
    if args.records < 1:
        parser.error("--records must be at least 1")
    print(f"bench_import: {args.records} records; load average {os.getloadavg()[0]:.2f}")
    print("| embedder | first import | memories/s | again (all unchanged) | records/s |")
    print("|---|---:|---:|---:|---:|")
    for embedder in [name.strip() for name in args.embedders.split(",") if name.strip()]:
        with tempfile.TemporaryDirectory(prefix="bench-import-") as scratch:
            result = bench(args.records, embedder, Path(scratch))
        first, second = result["first_s"], result["second_s"]
        print(
            f"| {embedder} | {first:.1f} s | {args.records / first:.0f} | {second:.1f} s | "
            f"{args.records / second:.0f} |"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
