#!/usr/bin/env python3
"""Door latency: seed one space with N memories, then time search and save over real HTTP.

    .venv/bin/python scripts/bench_door.py [--sizes 10000,100000] [--embedder none|onnx] [--queries 200]
        [--db postgresql://USER:PASSWORD@HOST/DATABASE | --db pgserver]

For each size it seeds a fresh SQLite file (with `--db`, a fresh database on that PostgreSQL server,
dropped afterwards; `pgserver` starts a throwaway server from the pgserver wheel) through the memory service's own write path (`MemoryService.save_many`,
vectors computed in batches when an embedder is set), starts the real `bli-memory-door serve` on it,
and measures from one keep-alive client: search p50/p95 (limit 5), save p50/p95, and, with an
embedder, the query-embedding time alone. Progress goes to stderr; the table to stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from bli_memory.door.embed import load_embedder
from bli_memory.door.memories import MemoryService
from bli_memory.door.store import open_store

LISTENING = "bli-memory-door listening on "
TAG = "repo_bench"
SEED_BATCH = 1000
BIN = Path(sys.executable).parent
#: --reuse-vectors: past this many memories, seeding reuses the vectors of the first ones (vector search
#: costs the same whatever the values; embedding 100 000 texts here takes a quarter of an hour).
DISTINCT_VECTORS = 10_000
REUSE_VECTORS = False
#: bulk-import throughput (memories per second, embedding included) per size, filled by seed().
SEED_RATE: dict[int, float] = {}

SUBJECTS = "the API gateway|the billing service|our CI pipeline|the mobile app|the search index|staging|the auth module|the data warehouse|the release train|the feature flag service|the payments worker|the docs site".split(
    "|"
)
VERBS = "uses|depends on|was migrated to|must never call|is configured with|caches|retries against|is deployed by|logs to|is tested with|reads from|writes to".split(
    "|"
)
OBJECTS = "PostgreSQL 16|Redis 7|a 30 second timeout|MAX_POOL_SIZE=20|the useAuthStore hook|ArgoCD|Flux|S3 bucket assets-prod|Kafka topic orders.v2|ruff and mypy|pnpm workspaces|Node 20|BLI-1234 workaround|gRPC on port 9090|OpenTelemetry|a nightly cron at 02:00 UTC".split(
    "|"
)
REASONS = "because the old one leaked connections|after the outage in March|to keep costs down|so that tests stay fast|per the security review|until the vendor fixes it|as agreed in the design review|".split(
    "|"
)


#: real project memories name many distinct files, modules and tickets; a few thousand made-up words
#: give the keyword channel a long-tailed vocabulary instead of forty words shared by every row.
_SYLLABLES = "ka lo mi nu pe ra si to vu xe ba de fi go hu ja ke li mo ne".split()
VOCABULARY = sorted({a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES})[:4000]


def sentence(rng: random.Random, index: int) -> str:
    parts = [rng.choice(SUBJECTS).capitalize(), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(REASONS)]
    where = f"see src/{rng.choice(VOCABULARY)}/{rng.choice(VOCABULARY)}.py and ticket BLI-{rng.randrange(1, 20000)}"
    return " ".join(part for part in parts if part) + f"; {where} (note {index})."


def query(rng: random.Random) -> str:
    """Half broad questions, a quarter module names, a quarter ticket ids."""
    kind = rng.random()
    if kind < 0.5:
        return f"what about {rng.choice(SUBJECTS)} and {rng.choice(OBJECTS)}?"
    if kind < 0.75:
        return f"{rng.choice(VOCABULARY)} module"
    return f"BLI-{rng.randrange(1, 20000)}"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def seed(db: Path | str, size: int, embedder_spec: str) -> str:
    embedder, warning = load_embedder(embedder_spec)
    if warning:
        sys.stderr.write(warning + "\n")
    memories = MemoryService(open_store(db), embedder)
    _, token = memories.store.create_device(person="bench", team="local", admin=True)
    principal = memories.authenticate(token)
    assert principal is not None
    rng = random.Random(size)
    started = time.perf_counter()
    distinct: dict[int, np.ndarray] = {}  # with --reuse-vectors: vectors of the first DISTINCT_VECTORS texts
    for start in range(0, size, SEED_BATCH):
        texts = [sentence(rng, index) for index in range(start, min(size, start + SEED_BATCH))]
        vectors: np.ndarray | None = None
        if REUSE_VECTORS and embedder.dim and start >= DISTINCT_VECTORS:
            vectors = np.vstack([distinct[(start + i) % DISTINCT_VECTORS] for i in range(len(texts))])
        elif REUSE_VECTORS and embedder.dim:
            vectors = embedder.embed(texts, kind="passage")
            for i, vector in enumerate(vectors):
                distinct[start + i] = vector
        memories.save_many(principal, TAG, texts, vectors=vectors)
        sys.stderr.write(f"\r  seeded {start + len(texts):>7}/{size} ({time.perf_counter() - started:.0f} s)")
    sys.stderr.write("\n")
    memories.close()
    SEED_RATE[size] = size / (time.perf_counter() - started)
    return token


def start_door(db: Path | str, embedder_spec: str) -> tuple[subprocess.Popen[str], str, int]:
    process = subprocess.Popen(
        [
            str(BIN / "bli-memory-door"),
            "serve",
            "--port",
            "0",
            "--db",
            str(db),
            "--no-autopair",
            "--embedder",
            embedder_spec,
            "--no-worker",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith(LISTENING):
            # keep reading its log, or a full pipe would stop the door mid-bench
            threading.Thread(target=process.stderr.read, daemon=True).start()
            host, port = line[len(LISTENING) :].strip().removeprefix("http://").split(":")
            return process, host, int(port)
    raise SystemExit("the door did not start")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc): the door's own cost, whatever the load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_calls(
    conn: http.client.HTTPConnection, token: str, path: str, bodies: list[dict[str, object]]
) -> list[float]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    timings = []
    for body in bodies:
        payload = json.dumps(body)
        started = time.perf_counter()
        conn.request("POST", path, payload, headers)
        response = conn.getresponse()
        response.read()
        timings.append((time.perf_counter() - started) * 1000)
        if response.status >= 300:
            raise SystemExit(f"{path} answered {response.status}")
    return timings


def fresh_database(server: str, size: int) -> str:
    """A new empty database on the PostgreSQL server at `server`; its URL."""
    import psycopg

    name = f"bench_{size}_{os.getpid()}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    scheme, _, rest = server.partition("://")
    head, question, params = rest.partition("?")
    return f"{scheme}://{head.split('/', 1)[0]}/{name}{question}{params}"


def drop_database(server: str, url: str) -> None:
    import psycopg

    name = url.partition("://")[2].partition("?")[0].split("/", 1)[1]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def bench(size: int, embedder_spec: str, queries: int, server: str | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        db: Path | str = Path(folder) / "bench.db" if server is None else fresh_database(server, size)
        sys.stderr.write(
            f"size {size}, embedder {embedder_spec}, store {'sqlite' if server is None else 'postgresql'}\n"
        )
        token = seed(db, size, embedder_spec)
        process, host, port = start_door(db, embedder_spec)
        try:
            conn = http.client.HTTPConnection(host, port, timeout=60)
            rng = random.Random(7)
            search_bodies: list[dict[str, object]] = [
                {"q": query(rng), "containerTag": TAG} for _ in range(queries)
            ]
            timed_calls(conn, token, "/api/memory/search", search_bodies[:20])  # warm the vector cache
            cpu_before = cpu_seconds(process.pid)
            search = timed_calls(conn, token, "/api/memory/search", search_bodies)
            search_cpu_ms = (cpu_seconds(process.pid) - cpu_before) * 1000 / len(search_bodies)
            save_bodies: list[dict[str, object]] = [
                {"content": sentence(rng, size + index) + " fresh", "containerTag": TAG}
                for index in range(queries)
            ]
            cpu_before = cpu_seconds(process.pid)
            save = timed_calls(conn, token, "/api/memory/save", save_bodies)
            save_cpu_ms = (cpu_seconds(process.pid) - cpu_before) * 1000 / len(save_bodies)
        finally:
            process.terminate()
            process.wait(30)
            if server is not None:
                drop_database(server, str(db))
        result = {
            "search_p50": statistics.median(search),
            "broad_p50": statistics.median(
                [
                    ms
                    for ms, body in zip(search, search_bodies, strict=True)
                    if str(body["q"]).startswith("what about")
                ]
            ),
            "identifier_p50": statistics.median(
                [
                    ms
                    for ms, body in zip(search, search_bodies, strict=True)
                    if not str(body["q"]).startswith("what about")
                ]
            ),
            "search_p95": percentile(search, 0.95),
            "save_p50": statistics.median(save),
            "save_p95": percentile(save, 0.95),
            "search_cpu": search_cpu_ms,
            "save_cpu": save_cpu_ms,
        }
        if embedder_spec != "none":
            embedder, _ = load_embedder(embedder_spec)
            texts = [str(body["q"]) for body in search_bodies]
            embedder.embed(texts[:5], kind="query")
            embed_ms = []
            for text in texts:
                started = time.perf_counter()
                embedder.embed([text], kind="query")
                embed_ms.append((time.perf_counter() - started) * 1000)
            result["query_embed_p50"] = statistics.median(embed_ms)
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="10000,100000", help="comma-separated space sizes (default 10000,100000)"
    )
    parser.add_argument("--embedder", default="none", help="none (keyword + recency) or onnx (default none)")
    parser.add_argument(
        "--reuse-vectors",
        action="store_true",
        help=f"embed only the first {DISTINCT_VECTORS:,} memories and reuse their vectors for the rest",
    )
    parser.add_argument(
        "--queries", type=int, default=200, help="searches and saves timed per size (default 200)"
    )
    parser.add_argument(
        "--db",
        help="a PostgreSQL server (postgresql:// URL with the right to create databases), or pgserver "
        "for a throwaway one; default: a SQLite file per size",
    )
    args = parser.parse_args()
    global REUSE_VECTORS
    REUSE_VECTORS = args.reuse_vectors
    try:
        sizes = [int(size) for size in args.sizes.split(",")]
    except ValueError:
        parser.error("--sizes takes integers, e.g. 10000,100000")
    server, throwaway = args.db, None
    if server == "pgserver":
        import pgserver

        throwaway = tempfile.mkdtemp(prefix="bench-pg-")
        server = pgserver.get_server(throwaway, cleanup_mode="delete").get_uri()
    rows = [(size, bench(size, args.embedder, args.queries, server)) for size in sizes]
    store = "sqlite" if server is None else "postgresql"
    print(
        f"door latency over HTTP, store {store}, embedder {args.embedder}, {args.queries} calls each, ms (python {sys.version.split()[0]}, {os.cpu_count()} cpus)"
    )
    extra = " | query embed p50" if args.embedder != "none" else ""
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"load average {load}; door CPU = the door process's own CPU time per call")
    print(
        f"| memories | search p50 | search p95 | search door CPU | save p50 | save p95 | save door CPU{extra} |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if extra else ""))
    for size, result in rows:
        result["bulk_rate"] = SEED_RATE.get(size, 0.0)
        line = (
            f"| {size:,} | {result['search_p50']:.2f} | {result['search_p95']:.2f} | {result['search_cpu']:.2f} | "
            f"{result['save_p50']:.2f} | {result['save_p95']:.2f} | {result['save_cpu']:.2f} |"
        )
        if extra:
            line += f" {result['query_embed_p50']:.2f} |"
        print(line)
    for size, result in rows:
        print(
            f"search p50 at {size:,} by query kind: broad questions {result['broad_p50']:.2f} ms, "
            f"module names and ticket ids {result['identifier_p50']:.2f} ms"
        )
    for size, result in rows:
        print(
            f"bulk import of {size:,}: {result['bulk_rate']:,.0f} memories/s (MemoryService.save_many, batches of {SEED_BATCH})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
