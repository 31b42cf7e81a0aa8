#!/usr/bin/env python3
"""The prompt hook through the resident daemon, next to the direct path and the interpreter floor.

Round-robin (so machine noise hits every case alike), each a fresh process as the host runs it:

    python -c pass                   the floor
    hook prompt, direct              BLI_MEMORY_DAEMON=0: settings, space, connect, search, render
    hook prompt, via daemon          the same prompt answered by a warm `bli-memory-mcp daemon`
    hook session-start, direct / via daemon

against a local door (embedder `none`, SQLite) holding 10 000 memories in the space of a real git
repository (the folder the hooks run in; its space is computed, not overridden, so the daemon's
space cache is part of what is measured). Reports medians, p90 and ratios to the floor; each case's
last receipt is printed so the path measured is the path meant. "hook body" is the median of the
receipts' `elapsed_ms` (the hook's work after interpreter start); the door's own search time, on a
warm connection, is printed last: on loopback it is most of what the daemon cannot remove. Target: the
prompt hook via the daemon within 3x `python -c pass` (a prompt must not feel slower with memory on).

    .venv/bin/python scripts/bench_daemon.py [--rounds 30] [--memories 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import local_door  # scripts/local_door.py

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
HOOK_BIN = str(VENV_BIN / "bli-memory-mcp")
#: `python -c pass` of the interpreter the hook runs on: the floor its ratio is measured against
FLOOR_PYTHON = sys.executable
EMBEDDER = "none"
#: names an identifier an on-topic memory holds: on a door without an embedder (no similarity to
#: clear) the hook keeps a keyword match only for such a name, so the prompt cases render a block
QUESTION = "why does the prompt hook time out on big repositories in space.py?"
ON_TOPIC = [
    "The prompt hook used to time out on big repositories because it spawned git; it now reads git's files.",
    "Big repositories slowed the prompt hook until space.py stopped asking git for the remote.",
    "The prompt hook budget is 2 s; on big repositories most of it went to connecting, not searching.",
]
WORDS = (
    "door hook prompt session memory space token daemon socket deadline recall search index sqlite "
    "vector keyword ranking tombstone version history profile context librarian extract redact team "
    "device person install zipapp cold start interpreter import cache worktree remote origin config "
    "latency budget receipt stats outage retry keepalive connection thread worker queue lock stamp"
).split()


def receipt_fields(receipt: str) -> dict[str, Any]:
    """The JSON fields of a hook's stderr receipt (`[bli-memory] prompt ok {...}`)."""
    fields: dict[str, Any] = json.loads(receipt.split(" ", 3)[3])
    return fields


def fake_memories(count: int, seed: int = 7) -> list[str]:
    """Distinct, wordy sentences so the keyword channel has real work (and a few on-topic ones)."""
    rng = random.Random(seed)
    out = []
    for index in range(count - len(ON_TOPIC)):
        words = rng.choices(WORDS, k=rng.randint(8, 24))
        out.append(f"Note {index}: " + " ".join(words) + ".")
    return out + ON_TOPIC


def make_repo(folder: Path) -> None:
    folder.mkdir(parents=True)
    for args in (["init", "-q"], ["remote", "add", "origin", "https://example.invalid/bench/daemon.git"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def seed_store(db: Path, tag: str, count: int) -> str:
    """Create the device and bulk-insert the memories through the memory service itself; returns the token."""
    sys.path.insert(0, str(REPO))
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.store.sqlite import SqliteStore

    memories = MemoryService(SqliteStore(db))
    try:
        _, token = memories.store.create_device(person="bench", team="local", admin=True)
        principal = memories.authenticate(token)
        assert principal is not None
        memories.save_many(principal, tag, fake_memories(count), created_at=time.time() - 86400)
    finally:
        memories.close()
    return token


def start_door(db: Path, home: Path) -> tuple[subprocess.Popen[str], str]:
    """The door over `db`, its extraction worker on (`--embedder` wins over BLI_MEMORY_EMBEDDER)."""
    return local_door.start_door(db, home, EMBEDDER, "bench_daemon", worker=True)


def start_daemon(env: dict[str, str]) -> subprocess.Popen[bytes]:
    from bli_memory import daemon_wire

    process = subprocess.Popen(
        [HOOK_BIN, "daemon"], env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 20
    while not isinstance(daemon_wire.ping(time.monotonic() + 1, env), dict):
        if time.monotonic() > deadline or process.poll() is not None:
            raise SystemExit("bench_daemon: the daemon did not start")
        time.sleep(0.02)
    return process


def run_once(argv: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> tuple[float, str, str]:
    """(wall seconds, stdout, last receipt line) of one process."""
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_daemon: {argv} exited {done.returncode}")
    receipts = [line for line in done.stderr.decode().splitlines() if line.startswith("[bli-memory]")]
    return elapsed, done.stdout.decode(), receipts[-1] if receipts else ""


def door_search_ms(url: str, token: str, tag: str, rounds: int) -> float:
    """The door's own cost for the prompt's search, on one warm keep-alive connection (median)."""
    from bli_memory.door_client import DoorClient

    samples = []
    with DoorClient(url, token) as client:
        for _ in range(rounds + 1):
            started = time.perf_counter()
            client.search(QUESTION, tag, limit=5, threshold=0.55, deadline=time.monotonic() + 5)
            samples.append(time.perf_counter() - started)
    return statistics.median(samples[1:]) * 1000


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument(
        "--client-bin",
        help="bin folder of the install to measure (e.g. a venv with the built wheel); default: this venv",
    )
    args = parser.parse_args()
    global FLOOR_PYTHON
    if args.client_bin:
        FLOOR_PYTHON = str(Path(args.client_bin) / "python")

    work = Path(tempfile.mkdtemp(prefix="bdb", dir="/tmp"))  # short: a unix socket path is ~104 bytes
    door = daemon = None
    try:
        home = work / "h"
        home.mkdir()
        project = work / "project"
        make_repo(project)
        sys.path.insert(0, str(REPO))
        from bli_memory.settings import write_session
        from bli_memory.space import container_tag

        base_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8"}
        tag = container_tag(str(project), env=base_env)
        started = time.monotonic()
        token = seed_store(work / "bench.db", tag, args.memories)
        seeded_s = time.monotonic() - started
        door, url = start_door(work / "bench.db", work / "door-home")
        write_session(url, token, env=base_env)
        daemon = start_daemon(base_env)

        prompt = json.dumps({"session_id": "b", "prompt": QUESTION, "cwd": str(project)}).encode()
        start_payload = json.dumps({"session_id": "b", "source": "startup", "cwd": str(project)}).encode()
        direct_env = {**base_env, "BLI_MEMORY_DAEMON": "0"}
        daemon_env = {**base_env, "BLI_MEMORY_DAEMON": "1"}
        # what `install` registers: the client's python running the CLI with -c (or this venv's script)
        from bli_memory.install.contract import HOOK_LAUNCH

        hook = [FLOOR_PYTHON, "-c", HOOK_LAUNCH, "hook"] if args.client_bin else [HOOK_BIN, "hook"]
        cases: list[tuple[str, list[str], bytes, dict[str, str], str | None]] = [
            ("python -c pass", [FLOOR_PYTHON, "-c", "pass"], b"", base_env, None),
            ("hook prompt, direct", [*hook, "prompt"], prompt, direct_env, "direct"),
            ("hook prompt, via daemon", [*hook, "prompt"], prompt, daemon_env, "daemon"),
            ("hook session-start, direct", [*hook, "session-start"], start_payload, direct_env, "direct"),
            ("hook session-start, via daemon", [*hook, "session-start"], start_payload, daemon_env, "daemon"),
        ]
        times: dict[str, list[float]] = {name: [] for name, *_ in cases}
        bodies: dict[str, list[int]] = {name: [] for name, *_ in cases}
        last: dict[str, tuple[str, str]] = {}
        for _name, argv, stdin, env, _ in cases:  # warm-up: page cache, the daemon's connections
            run_once(argv, stdin, env, str(project))
        for _ in range(args.rounds):
            for name, argv, stdin, env, route in cases:
                elapsed, stdout, receipt = run_once(argv, stdin, env, str(project))
                if route is not None and f'"via":"{route}"' not in receipt:
                    raise SystemExit(f"bench_daemon: {name} took another route: {receipt}")
                times[name].append(elapsed)
                if receipt:
                    bodies[name].append(int(receipt_fields(receipt)["elapsed_ms"]))
                last[name] = (stdout, receipt)
        if last["hook prompt, direct"][0] != last["hook prompt, via daemon"][0]:
            raise SystemExit("bench_daemon: the daemon printed something else than the direct path")

        floor = statistics.median(times["python -c pass"])
        print(
            f"bench_daemon: {args.memories} memories in {tag} (seeded in {seeded_s:.1f} s), "
            f"{args.rounds} rounds, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
            f"Python {sys.version.split()[0]}"
        )
        print(f"{'case':32} {'median':>9} {'p90':>9} {'x floor':>8} {'hook body':>10}")
        for name, *_ in cases:
            median = statistics.median(times[name])
            p90 = percentile(times[name], 0.9)
            body = f"{statistics.median(bodies[name]):8.0f}ms" if bodies[name] else ""
            print(f"{name:32} {median * 1000:7.1f}ms {p90 * 1000:7.1f}ms {median / floor:7.2f}x {body:>10}")
        search_ms = door_search_ms(url, token, tag, args.rounds)
        print(
            f"{'door search alone (warm, in-process)':40} {search_ms:7.1f}ms   (the daemon cannot go below this)"
        )
        direct = statistics.median(times["hook prompt, direct"])
        via = statistics.median(times["hook prompt, via daemon"])
        print(
            f"prompt via daemon / direct: {via / direct:.2f}  (target: via daemon <= 3x the floor: "
            f"{'met' if via <= 3 * floor else 'NOT met'})"
        )
        hits = receipt_fields(last["hook prompt, via daemon"][1])["hits"]
        print(f"recall block: {hits} hits; receipts:")
        for name, (_, receipt) in last.items():
            if receipt:
                print(f"  {name:30} {receipt}")
    finally:
        for process in (daemon, door):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
