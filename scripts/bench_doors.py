#!/usr/bin/env python3
"""Two doors over one PostgreSQL database against one door: throughput and latency of a mixed load.

    .venv/bin/python scripts/bench_doors.py [--db pgserver | --db postgresql://USER:PASSWORD@HOST/DB]
        [--memories 10000] [--clients 16] [--duration 20] [--search-share 0.8] [--embedder none|onnx]
        [--no-analyze]

It makes a database of its own on the server (`pgserver`, the default, starts a throwaway PostgreSQL
16 with pgvector from the `pgserver` wheel; see scripts/pg_throwaway.py), seeds one space with N
memories through the memory service's own write path (`MemoryService.save_many`), gathers the
planner's statistics (`ANALYZE`, as autovacuum would within a minute; `--no-analyze` skips it), then
runs the same load twice: against one `bli-memory-door serve` (extraction worker off), then against
two over the same database. `--clients` threads, each with one keep-alive HTTP connection (client i talks to door
i mod doors), send requests back to back for `--duration` seconds: a search (limit 5) with
probability `--search-share`, otherwise a save of a new memory.

Read-your-writes is checked along the way: a client's next search after each of its saves asks the
*other* door (the same one when there is one) for a word only that save holds; the save's id must be
among the results. Failures are counted (expect 0), and these searches are timed with the others.

Printed side by side: requests per second, search and save p50/p95 (ms), the CPU time per request
of the doors, of PostgreSQL (its processes, when it runs on this machine) and of the clients, errors,
reopened idle connections, read-your-writes checks and failures, and the load average when the run
ended. Clients, doors and PostgreSQL share the machine: on a small one the figures are the whole
system's, not the door's alone. Progress goes to stderr; the table to stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import string
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import local_door  # scripts/local_door.py

from bli_memory.door.embed import load_embedder
from bli_memory.door.memories import MemoryService
from bli_memory.door.store import open_store

BIN = Path(sys.executable).parent
TAG = "repo_bench_doors"
SEED_BATCH = 1000
DOOR_START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 60.0
SEARCH_LIMIT = 5
#: searches each door answers before the clock starts (its keyword index and caches built)
WARM_SEARCHES = 5
#: failed requests described on stderr per run
ERRORS_SHOWN = 5
#: letters of a save's own word (read-your-writes): 26**12 words, none met twice in a run
CHECK_WORD_LETTERS = 12

SUBJECTS = (
    "the API gateway|the billing service|our CI pipeline|the mobile app|the search index|staging|"
    "the auth module|the data warehouse|the release train|the payments worker"
).split("|")
VERBS = "uses|depends on|was migrated to|must never call|caches|retries against|logs to|reads from".split("|")
OBJECTS = (
    "PostgreSQL 16|Redis 7|a 30 second timeout|MAX_POOL_SIZE=20|ArgoCD|Kafka topic orders.v2|"
    "pnpm workspaces|Node 20|gRPC on port 9090|OpenTelemetry|a nightly cron at 02:00 UTC"
).split("|")
_SYLLABLES = "ka lo mi nu pe ra si to vu xe ba de fi go hu ja".split()
#: made-up module names: a long-tailed vocabulary, as real memories name many files
VOCABULARY = sorted({a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES})


def sentence(rng: random.Random, index: int) -> str:
    return (
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)}; see "
        f"src/{rng.choice(VOCABULARY)}/{rng.choice(VOCABULARY)}.py and ticket BLI-{rng.randrange(1, 20000)} "
        f"(note {index})."
    )


def query(rng: random.Random) -> str:
    """Half broad questions, a quarter module names, a quarter ticket ids."""
    kind = rng.random()
    if kind < 0.5:
        return f"what about {rng.choice(SUBJECTS)} and {rng.choice(OBJECTS)}?"
    if kind < 0.75:
        return f"{rng.choice(VOCABULARY)} module"
    return f"BLI-{rng.randrange(1, 20000)}"


def percentile(values: Sequence[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def seed(db: str, size: int, embedder_spec: str) -> str:
    """`size` memories in one space of a new device's; the device's token."""
    embedder, warning = load_embedder(embedder_spec, os.environ)
    if warning:
        sys.stderr.write(warning + "\n")
    memories = MemoryService(open_store(db), embedder)
    try:
        _, token = memories.store.create_device(person="bench", team="local", admin=True)
        principal = memories.authenticate(token)
        assert principal is not None
        rng = random.Random(size)
        started = time.perf_counter()
        for start in range(0, size, SEED_BATCH):
            texts = [sentence(rng, index) for index in range(start, min(size, start + SEED_BATCH))]
            memories.save_many(principal, TAG, texts)
            sys.stderr.write(
                f"\r  seeded {start + len(texts):>7}/{size} ({time.perf_counter() - started:.0f} s)"
            )
        sys.stderr.write("\n")
    finally:
        memories.close()
    return token


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (the 3rd field of the file is [0])."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_cpu_seconds(pid: int, *, with_ended_children: bool = False) -> float:
    """User + system CPU of a process so far (Linux /proc); with the children it has waited for."""
    fields = _stat(pid)
    ticks = int(fields[11]) + int(fields[12])
    if with_ended_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def server_pid(url: str) -> int | None:
    """The PostgreSQL postmaster's process id when the server runs on this machine (else None)."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT pg_read_file('postmaster.pid')").fetchone()
        pid = int(str(row[0]).split()[0]) if row else 0
        _stat(pid)
    except (psycopg.Error, OSError, ValueError, IndexError):
        return None
    return pid


def server_cpu_seconds(pid: int) -> float:
    """CPU of the PostgreSQL server so far: the postmaster, its ended backends and the live ones."""
    total = process_cpu_seconds(pid, with_ended_children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = _stat(int(entry.name))
                if int(fields[1]) == pid:
                    total += process_cpu_seconds(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue  # it ended meanwhile
    return total


def analyze(db: str) -> None:
    """Gather the planner's statistics of the freshly seeded tables, as autovacuum does within about
    a minute of a bulk load (without them PostgreSQL reads a team's every row to find a few by id)."""
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("ANALYZE")


class Door:
    """One `bli-memory-door serve` on a loopback port over the database; its log drained so it never
    blocks."""

    def __init__(self, db: str, embedder_spec: str, home: Path) -> None:
        self.lines: list[str] = []
        env = {**os.environ, "XDG_DATA_HOME": str(home / "share")}
        try:
            self.process, url = local_door.start_door(
                db, home, embedder_spec, "bench_doors", DOOR_START_TIMEOUT_S, env=env, lines=self.lines
            )
        except local_door.DoorDidNotStart:
            raise SystemExit("bench_doors: the door did not start:\n" + "\n".join(self.lines[-10:])) from None
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.host, self.port = host, int(port)

    def cpu_seconds(self) -> float:
        """User + system CPU of the door so far (Linux /proc)."""
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        local_door.stop_door(self.process, 30)


class Client:
    """One keep-alive connection to one door. A kept connection the door closed while it sat idle
    (past the door's idle timeout) is opened again and the request sent once more, as HTTP client
    libraries do; such reconnections are counted (`reconnects`)."""

    def __init__(self, door: Door, token: str) -> None:
        self.door = door
        self.conn = http.client.HTTPConnection(door.host, door.port, timeout=REQUEST_TIMEOUT_S)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.used = False
        self.reconnects = 0

    def _send(self, path: str, payload: str) -> tuple[int, bytes]:
        self.conn.request("POST", path, payload, self.headers)
        response = self.conn.getresponse()
        return response.status, response.read()

    def post(self, path: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
        payload = json.dumps(body)
        try:
            try:
                status, raw = self._send(path, payload)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if not self.used:
                    raise
                self.conn.close()
                self.reconnects += 1
                status, raw = self._send(path, payload)
        except (OSError, http.client.HTTPException):
            self.conn.close()  # the next request connects again
            self.used = False
            return 0, {}
        self.used = True
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, {}

    def close(self) -> None:
        self.conn.close()


@dataclass
class Tally:
    search_ms: list[float] = field(default_factory=list)
    save_ms: list[float] = field(default_factory=list)
    errors: int = 0
    reconnects: int = 0
    #: what the first failed requests answered (status and error code), for the report
    error_kinds: list[str] = field(default_factory=list)

    def error(self, path: str, status: int, answer: dict[str, object]) -> None:
        self.errors += 1
        if len(self.error_kinds) < ERRORS_SHOWN:
            said = answer.get("message") or answer.get("error") or "no answer"
            self.error_kinds.append(f"{path} {status or 'connection lost'}: {said}")

    checks: int = 0
    check_failures: int = 0


def client_loop(
    number: int, doors: Sequence[Door], token: str, until: float, search_share: float, tally: Tally
) -> None:
    """Requests back to back until `until`: searches and saves; after a save, the next search asks
    the other door for the saved memory."""
    rng = random.Random(1000 + number)
    home = Client(doors[number % len(doors)], token)
    other = Client(doors[(number + 1) % len(doors)], token)
    pending: tuple[str, str] | None = None  # (saved id, its own word) to look for on the other door
    saved = 0
    try:
        while time.perf_counter() < until:
            if rng.random() < search_share:
                if pending is not None:
                    client, body = other, {"q": pending[1], "containerTag": TAG, "limit": SEARCH_LIMIT}
                else:
                    client, body = home, {"q": query(rng), "containerTag": TAG, "limit": SEARCH_LIMIT}
                started = time.perf_counter()
                status, answer = client.post("/api/memory/search", body)
                tally.search_ms.append((time.perf_counter() - started) * 1000)
                if status != 200:
                    tally.error("search", status, answer)
                elif pending is not None:
                    tally.checks += 1
                    results = answer.get("results")
                    ids = (
                        [hit.get("id") for hit in results if isinstance(hit, dict)]
                        if isinstance(results, list)
                        else []
                    )
                    if pending[0] not in ids:
                        tally.check_failures += 1
                    pending = None
            else:
                word = "".join(rng.choice(string.ascii_lowercase) for _ in range(CHECK_WORD_LETTERS))
                content = f"{sentence(rng, 1_000_000 + number * 100_000 + saved)} Marker {word}."
                saved += 1
                started = time.perf_counter()
                status, answer = home.post("/api/memory/save", {"content": content, "containerTag": TAG})
                tally.save_ms.append((time.perf_counter() - started) * 1000)
                if status not in (200, 201) or not isinstance(answer.get("id"), str):
                    tally.error("save", status, answer)
                else:
                    pending = (str(answer["id"]), word)
    finally:
        tally.reconnects = home.reconnects + other.reconnects
        home.close()
        other.close()


def run_load(
    doors: Sequence[Door],
    token: str,
    clients: int,
    duration_s: float,
    search_share: float,
    postmaster: int | None,
) -> dict[str, float]:
    for door in doors:  # each door builds its space's index before the clock starts
        warm = Client(door, token)
        rng = random.Random(3)
        for _ in range(WARM_SEARCHES):
            warm.post("/api/memory/search", {"q": query(rng), "containerTag": TAG, "limit": SEARCH_LIMIT})
        warm.close()
    tallies = [Tally() for _ in range(clients)]
    cpu_before = sum(door.cpu_seconds() for door in doors)
    server_before = server_cpu_seconds(postmaster) if postmaster else 0.0
    own_before = time.process_time()
    started = time.perf_counter()
    until = started + duration_s
    threads = [
        threading.Thread(target=client_loop, args=(i, doors, token, until, search_share, tallies[i]))
        for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(duration_s + REQUEST_TIMEOUT_S + 10)
    elapsed = time.perf_counter() - started
    cpu = sum(door.cpu_seconds() for door in doors) - cpu_before
    server_cpu = server_cpu_seconds(postmaster) - server_before if postmaster else float("nan")
    clients_cpu = time.process_time() - own_before
    for tally in tallies:
        for kind in tally.error_kinds:
            sys.stderr.write(f"  failed: {kind}\n")
    search = [ms for t in tallies for ms in t.search_ms]
    save = [ms for t in tallies for ms in t.save_ms]
    requests = len(search) + len(save)
    return {
        "requests": requests,
        "rate": requests / elapsed,
        "searches": len(search),
        "saves": len(save),
        "search_p50": percentile(search, 0.5),
        "search_p95": percentile(search, 0.95),
        "save_p50": percentile(save, 0.5),
        "save_p95": percentile(save, 0.95),
        "door_cpu_ms": cpu * 1000 / max(requests, 1),
        "server_cpu_ms": server_cpu * 1000 / max(requests, 1),
        "clients_cpu_ms": clients_cpu * 1000 / max(requests, 1),
        "errors": sum(t.errors for t in tallies),
        "reconnects": sum(t.reconnects for t in tallies),
        "checks": sum(t.checks for t in tallies),
        "check_failures": sum(t.check_failures for t in tallies),
        "load": os.getloadavg()[0],
    }


ROWS = (
    ("requests/s", "rate", "{:.1f}"),
    ("requests (searches + saves)", "requests", "{:.0f}"),
    ("search p50 ms", "search_p50", "{:.1f}"),
    ("search p95 ms", "search_p95", "{:.1f}"),
    ("save p50 ms", "save_p50", "{:.1f}"),
    ("save p95 ms", "save_p95", "{:.1f}"),
    ("doors' CPU ms per request", "door_cpu_ms", "{:.1f}"),
    ("PostgreSQL's CPU ms per request", "server_cpu_ms", "{:.1f}"),
    ("clients' CPU ms per request", "clients_cpu_ms", "{:.1f}"),
    ("errors (not 2xx, or no answer)", "errors", "{:.0f}"),
    ("kept connections closed by an idle door, reopened", "reconnects", "{:.0f}"),
    ("read-your-writes checks", "checks", "{:.0f}"),
    ("read-your-writes failures", "check_failures", "{:.0f}"),
    ("load average (1 min) at the end", "load", "{:.2f}"),
)


def table(results: Sequence[tuple[str, dict[str, float]]]) -> str:
    lines = ["| | " + " | ".join(label for label, _ in results) + " |", "|---|" + "---:|" * len(results)]
    for name, key, form in ROWS:
        lines.append(f"| {name} | " + " | ".join(form.format(r[key]) for _, r in results) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--db",
        default="pgserver",
        help="pgserver (a throwaway server from the wheel, the default) or a postgresql:// server "
        "allowed to create databases (one of the run's own, dropped after)",
    )
    parser.add_argument("--memories", type=int, default=10_000, help="memories seeded in the space (10000)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (16)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load per run (20)")
    parser.add_argument(
        "--search-share", type=float, default=0.8, help="fraction of requests that search (0.8)"
    )
    parser.add_argument(
        "--embedder", default="none", choices=("none", "onnx"), help="the doors' embedder (none)"
    )
    parser.add_argument(
        "--no-analyze",
        action="store_true",
        help="start the load right after seeding, before the planner has statistics of the new rows",
    )
    args = parser.parse_args(argv)
    if args.memories < 0 or args.clients < 1 or args.duration <= 0 or not 0 < args.search_share < 1:
        parser.error(
            "--memories must be 0 or more, --clients 1 or more, --duration above 0 and --search-share "
            "between 0 and 1 (both excluded)"
        )
    if args.db != "pgserver" and not args.db.startswith(("postgresql://", "postgres://")):
        parser.error("--db takes pgserver or a postgresql:// URL")
    import pg_throwaway  # scripts/pg_throwaway.py

    results: list[tuple[str, dict[str, float]]] = []
    with (
        pg_throwaway.server(args.db) as server,
        pg_throwaway.database(server, "bench_doors") as db,
        tempfile.TemporaryDirectory(prefix="bli-bench-doors-") as home,
    ):
        sys.stderr.write(f"seeding {args.memories} memories, embedder {args.embedder}\n")
        token = seed(db, args.memories, args.embedder)
        if not args.no_analyze:
            analyze(db)
        postmaster = server_pid(server)
        doors: list[Door] = []
        try:
            for count in (1, 2):
                while len(doors) < count:
                    doors.append(Door(db, args.embedder, Path(home)))
                sys.stderr.write(f"load on {count} door(s): {args.clients} clients, {args.duration:g} s\n")
                label = "one door" if count == 1 else "two doors"
                results.append(
                    (
                        label,
                        run_load(doors, token, args.clients, args.duration, args.search_share, postmaster),
                    )
                )
        finally:
            for door in doors:
                door.stop()
    print(
        f"mixed load over HTTP on PostgreSQL: {args.memories:,} memories in one space, embedder "
        f"{args.embedder}, {args.clients} clients for {args.duration:g} s each, "
        f"{args.search_share:.0%} searches (limit {SEARCH_LIMIT}), the rest saves, "
        f"{'no ANALYZE' if args.no_analyze else 'ANALYZE'} after seeding "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus)"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
