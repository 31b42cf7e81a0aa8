#!/usr/bin/env python3
"""Door latency: seed one space with N memories, then time search and save over real HTTP.

    .venv/bin/python scripts/bench_door.py [--sizes 10000,100000] [--embedder none|onnx] [--queries 200]
        [--db postgresql://USER:PASSWORD@HOST/DATABASE | --db pgserver]
    .venv/bin/python scripts/bench_door.py --scale [--sizes 10000,100000,1000000] [--db FOLDER|postgresql://...]
        [--ef-search 400,800] [--start-parts]

For each size it seeds a fresh SQLite file (with `--db`, a fresh database on that PostgreSQL server,
dropped afterwards; `pgserver` starts a throwaway server from the pgserver wheel) through the memory service's own write path (`MemoryService.save_many`,
vectors computed in batches when an embedder is set), starts the real `bli-memory-door serve` on it,
and measures from one keep-alive client: search p50/p95 (limit 5), save p50/p95, and, with an
embedder, the query-embedding time alone. Progress goes to stderr; the table to stdout.

--scale measures a big space with the packaged embedder's vectors: it bulk-loads each size once
and keeps it (`--db`: a folder of SQLite files, or a PostgreSQL server URL where each size is a
database of its own, `bli_scale_<size>`), with the vectors of `mixed_vectors` over a pool of real
embeddings (`--pool`, computed once). SQLite: through the store (`MemoryService.save_many`, batches
of SCALE_BATCH); then it starts the door without index snapshots if it has none (cold: it builds
them, and leaves them when it stops). PostgreSQL: by binary COPY, then the store's HNSW index built
once (`scale_seed_postgres`; load and build timed apart); the door keeps its keyword snapshot in
`bli-bench-scale/<database>.indexes` in the temporary folder (`--index-dir`), which a cold start
writes right after its build and again when it stops.
Then it starts the door (start-to-ready: from the process's start until the door says its indexes
are built), times searches and saves over HTTP, reads its resident memory, and measures recall@10
against exact search of the approximate index: the door's graph re-scored as the door does
(SQLite), or the server's HNSW index through the store's `nearest` (PostgreSQL; `--ef-search`
measures it at more `hnsw.ef_search` values too). `--start-parts` also times a start's parts
in-process (the store's rows for the keyword index, and its build).
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
from typing import Any

import local_door  # scripts/local_door.py
import numpy as np

from bli_memory.door.embed import load_embedder
from bli_memory.door.indexes import IndexLimits
from bli_memory.door.memories import MemoryService
from bli_memory.door.ranking import VECTOR_CANDIDATES
from bli_memory.door.snapshots import Snapshots
from bli_memory.door.store import open_store

LISTENING = local_door.LISTENING
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


def pool_texts(count: int) -> list[str]:
    """The distinct texts whose embeddings make the vector pool of the scale mode."""
    rng = random.Random(20261201)
    return [sentence(rng, index) for index in range(count)]


def vector_pool(path: Path, count: int) -> np.ndarray:
    """Real passage embeddings of `count` distinct texts, from `path` or computed once and kept there."""
    if path.exists():
        pool = np.load(path)
        if len(pool) == count:
            return pool
    embedder, warning = load_embedder("onnx", os.environ)
    if warning:
        raise SystemExit(f"the scale mode needs the packaged embedder: {warning}")
    texts = pool_texts(count)
    pool = np.zeros((count, embedder.dim), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, count, 256):
        pool[start : start + 256] = embedder.embed(texts[start : start + 256], kind="passage")
        sys.stderr.write(
            f"\r  embedded {min(count, start + 256):>6}/{count} pool texts ({time.perf_counter() - started:.0f} s)"
        )
    sys.stderr.write("\n")
    np.save(path, pool)
    return pool


def mixed_vectors(pool: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Vectors start..stop-1 of a space: vector i is the normalised sum of two real embeddings,
    pool[a] and pool[b] with a = i mod n and b = a + 1 + i div n (mod n): no two alike while
    i < n * (n - 1), and each as far from the others as meanings of real texts are."""
    count = len(pool)
    index = np.arange(start, stop)
    first = index % count
    second = (first + 1 + index // count) % count
    vectors = pool[first] + pool[second]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def seed(db: Path | str, size: int, embedder_spec: str) -> str:
    embedder, warning = load_embedder(embedder_spec, os.environ)
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
    """The door over `db` (scripts/local_door.py), and the host and port it listens on."""
    process, url = local_door.start_door(db, None, embedder_spec, "bench_door")
    host, port = url.removeprefix("http://").split(":")
    return process, host, int(port)


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
            embedder, _ = load_embedder(embedder_spec, os.environ)
            texts = [str(body["q"]) for body in search_bodies]
            embedder.embed(texts[:5], kind="query")
            embed_ms = []
            for text in texts:
                started = time.perf_counter()
                embedder.embed([text], kind="query")
                embed_ms.append((time.perf_counter() - started) * 1000)
            result["query_embed_p50"] = statistics.median(embed_ms)
        return result


# ---------------------------------------------------------------------------- scale mode

SCALE_TAG = "repo_scale"
SCALE_DOOR_OPTIONS = ("--no-autopair", "--embedder", "onnx", "--no-worker")
SCALE_BATCH = 5000
SCALE_SAVES = 50
RECALL_QUERIES = 100
INDEXED = "bli-memory-door indexed "
#: what a door says once it wrote the snapshots of the spaces it built at start
WROTE = "bli-memory-door wrote "
#: the longest a door may take to build its indexes from the store (a million vectors' graph).
COLD_READY_WAIT_S = 4 * 3600.0


def scale_store(db: str, size: int) -> tuple[str, str]:
    """(the store URL for `size`, the tag of its space). On PostgreSQL each size is a database of its
    own on the server (`bli_scale_<size>`, made when missing and kept between runs, like the SQLite
    files): the HNSW index of a model spans every space of a database, and a small space sharing it
    with a million rows would be searched by the store's exact fallback instead."""
    if db.startswith(("postgresql://", "postgres://")):
        import psycopg

        name = f"bli_scale_{size}"
        with psycopg.connect(db, autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                conn.execute(f'CREATE DATABASE "{name}"')
        from pg_throwaway import database_url  # scripts/pg_throwaway.py

        return database_url(db, name), SCALE_TAG
    folder = Path(db.removeprefix("sqlite:")).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / f"scale-{size}.db"), SCALE_TAG


def scale_seed(url: str, tag: str, size: int, pool: np.ndarray) -> tuple[str, float | None]:
    """A token for the space, and the bulk import rate (None when the space was seeded before)."""
    embedder, warning = load_embedder("onnx", os.environ)
    if warning:
        raise SystemExit(f"the scale mode needs the packaged embedder: {warning}")
    memories = MemoryService(open_store(url), embedder)
    _, token = memories.store.create_device(person="bench", team="local", admin=True)
    principal = memories.authenticate(token)
    assert principal is not None
    have = memories.store.count_current(principal.team_id, [tag])
    if have >= size:
        memories.close()
        return token, None
    if have:
        raise SystemExit(f"{url} holds {have:,} memories in {tag}, fewer than {size:,}: remove it first")
    rng = random.Random(size)
    started = time.perf_counter()
    for start in range(0, size, SCALE_BATCH):
        stop = min(size, start + SCALE_BATCH)
        texts = [sentence(rng, index) for index in range(start, stop)]
        memories.save_many(principal, tag, texts, vectors=mixed_vectors(pool, start, stop))
        sys.stderr.write(f"\r  seeded {stop:>8}/{size} ({time.perf_counter() - started:.0f} s)")
    sys.stderr.write("\n")
    memories.close()
    return token, size / (time.perf_counter() - started)


#: the columns the PostgreSQL bulk load writes, with their binary COPY types: a row as
#: `MemoryService.save_many` makes one (a current first version, no custom id, no metadata).
PG_COPY_COLUMNS = (
    ("id", "text"),
    ("team_id", "int8"),
    ("container_tag", "text"),
    ("content", "text"),
    ("content_hash", "text"),
    ("kind", "text"),
    ("status", "text"),
    ("version", "int4"),
    ("root_id", "text"),
    ("pinned", "int4"),
    ("person_id", "int8"),
    ("device_id", "text"),
    ("created_at", "float8"),
    ("updated_at", "float8"),
    ("embedding", "vector"),
    ("embedding_model", "text"),
)
#: the session settings of the one HNSW build after a bulk load (the machine has 24 GiB and 2 cores:
#: the graph of a million 384-dim vectors fits in memory, and one worker joins the leader).
PG_INDEX_SETTINGS = {"maintenance_work_mem": "4GB", "max_parallel_maintenance_workers": "1"}


def with_options(url: str, settings: dict[str, str]) -> str:
    """`url` with server settings for its sessions (libpq's `options`)."""
    from urllib.parse import quote

    options = quote(" ".join(f"-c {name}={value}" for name, value in settings.items()))
    return f"{url}{'&' if '?' in url else '?'}options={options}"


def scale_seed_postgres(
    url: str, tag: str, size: int, pool: np.ndarray
) -> tuple[str, float | None, dict[str, float]]:
    """The PostgreSQL side of `scale_seed`: (a token, rows/s of the load, timings).

    Inserting a million rows one statement each into a growing HNSW index ran at about 680 rows/s
    (25 minutes per million, index included). So the bench loads as a bulk import should: with the
    model's HNSW index not yet made, the rows go in by one binary COPY (the ids, hashes and columns
    `save_many` would write; the b-tree indexes kept as they go), then ANALYZE, then the store makes
    its own HNSW index once (`PostgresStore._ensure_vector_index`, the index a door makes on first
    use, so the door finds it there) with PG_INDEX_SETTINGS. The load and the index build are timed
    apart; the rate is that of the load alone."""
    import psycopg
    from pgvector.psycopg import register_vector

    from bli_memory.door.model import hash_text, new_id, now_s
    from bli_memory.door.store.postgres.schema import vector_index_name

    embedder, warning = load_embedder("onnx", os.environ)
    if warning:
        raise SystemExit(f"the scale mode needs the packaged embedder: {warning}")
    store = open_store(url)
    _, token = store.create_device(person="bench", team="local", admin=True)
    principal = store.authenticate(token)
    assert principal is not None
    have = store.count_current(principal.team_id, [tag])
    store.close()
    timings: dict[str, float] = {}
    index = vector_index_name(embedder.name, embedder.dim)
    if have and have < size:
        raise SystemExit(f"{url} holds {have:,} memories in {tag}, fewer than {size:,}: drop it first")
    rate = None
    if not have:
        columns = ", ".join(name for name, _ in PG_COPY_COLUMNS)
        rng = random.Random(size)
        started = time.perf_counter()
        with psycopg.connect(url) as conn:
            register_vector(conn)
            conn.execute(f'DROP INDEX IF EXISTS "{index}"')  # left by an interrupted run
            with (
                conn.cursor() as cursor,
                cursor.copy(f"COPY memories ({columns}) FROM STDIN WITH (FORMAT BINARY)") as copy,
            ):
                copy.set_types([kind for _, kind in PG_COPY_COLUMNS])
                for start in range(0, size, SCALE_BATCH):
                    stop = min(size, start + SCALE_BATCH)
                    vectors = mixed_vectors(pool, start, stop)
                    when = now_s()
                    for offset, index_in_space in enumerate(range(start, stop)):
                        text = sentence(rng, index_in_space)
                        memory_id = new_id("mem")
                        copy.write_row(
                            (
                                memory_id,
                                principal.team_id,
                                tag,
                                text,
                                hash_text(text),
                                "memory",
                                "current",
                                1,
                                memory_id,
                                0,
                                principal.person_id,
                                principal.device_id,
                                when,
                                when,
                                vectors[offset],
                                embedder.name,
                            )
                        )
                    sys.stderr.write(f"\r  copied {stop:>8}/{size} ({time.perf_counter() - started:.0f} s)")
            conn.execute("UPDATE bli_changes SET counter = counter + 1 WHERE id = 1")
        sys.stderr.write("\n")
        timings["copy_s"] = time.perf_counter() - started
        analyzed = time.perf_counter()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE memories")
        timings["analyze_s"] = time.perf_counter() - analyzed
        rate = size / (time.perf_counter() - started)
    with psycopg.connect(url, autocommit=True) as conn:
        there = conn.execute("SELECT 1 FROM pg_class WHERE relname = %s", (index,)).fetchone()
    if there is None:
        sys.stderr.write(f"  building the HNSW index {index} ({PG_INDEX_SETTINGS})\n")
        built = time.perf_counter()
        from bli_memory.door.store.postgres import PostgresStore

        indexing = PostgresStore(with_options(url, PG_INDEX_SETTINGS))
        indexing._ensure_vector_index(embedder.name, embedder.dim)  # the store's own index, made once
        indexing.close()
        timings["index_s"] = time.perf_counter() - built
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pg_table_size('memories'), pg_relation_size(%s::regclass), pg_database_size(current_database())",
            (f'"{index}"',),
        ).fetchone()
        assert row is not None
        timings["table_mib"], timings["index_mib"], timings["database_mib"] = (value / 2**20 for value in row)
    return token, rate, timings


class ScaleDoor:
    """A real door over `url`, its log kept, with the moments it listened and said it was indexed."""

    def __init__(self, url: str, index_folder: Path) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [
                str(BIN / "bli-memory-door"),
                "serve",
                "--port",
                "0",
                "--db",
                url,
                "--index-dir",
                str(index_folder),
                *SCALE_DOOR_OPTIONS,
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.listening = threading.Event()
        self.indexed = threading.Event()
        self.indexed_s = 0.0
        self.address = ("", 0)
        threading.Thread(target=self._read, daemon=True).start()
        if not self.listening.wait(300):
            raise SystemExit("the door did not start:\n" + "".join(self.lines[-20:]))
        self.listen_s = time.perf_counter() - self.started

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if line.startswith(LISTENING):
                host, port = line[len(LISTENING) :].strip().removeprefix("http://").split(":")
                self.address = (host, int(port))
                self.listening.set()
            elif line.startswith(INDEXED):
                self.indexed_s = time.perf_counter() - self.started
                self.indexed.set()

    def wait_line(self, start: str, timeout_s: float) -> str:
        """The door's first stderr line that starts with `start` (waited for at most `timeout_s`)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith(start):
                    return line
            time.sleep(0.1)
        raise SystemExit(f"the door never said {start!r}:\n" + "".join(self.lines[-20:]))

    def memory_mib(self) -> tuple[float, float]:
        """(resident, peak resident) MiB of the door process."""
        return local_door.memory_mib(self.process)

    def stop(self) -> float:
        """SIGTERM, and how long it took to stop (the snapshots are written then)."""
        started = time.perf_counter()
        self.process.terminate()
        self.process.wait(600)
        return time.perf_counter() - started


def scale_recall(url: str, tag: str, index_folder: Path, queries: list[str]) -> float | None:
    """recall@10 of the door's graph, re-scored with float32 vectors as the door does, against exact
    search; None when the space has no graph (it is searched exactly)."""
    from bli_memory.door.vectors import ApproximateVectors

    embedder, _ = load_embedder("onnx", os.environ)
    store = open_store(url)
    team_id = next(iter({t for t, space in store.spaces(1000) if space == tag}), None)
    if team_id is None:
        return None
    snapshots = Snapshots(index_folder)
    graph = snapshots.read_vectors((team_id, tag), embedder.name, embedder.dim)
    if graph is None:
        store.close()
        return None
    pairs = list(store.current_vectors(team_id, tag, embedder.name))
    store.close()
    ids = [memory_id for memory_id, _ in pairs]
    matrix = np.vstack([vector for _, vector in pairs])
    del pairs
    row_of = {memory_id: row for row, memory_id in enumerate(ids)}

    def fetch(wanted: Any) -> dict[str, np.ndarray]:
        return {memory_id: matrix[row_of[memory_id]] for memory_id in wanted if memory_id in row_of}

    recalls = []
    for query in embedder.embed(queries, kind="query"):
        sims = np.einsum("ij,j->i", matrix, query)
        exact = np.argpartition(-sims, 10)[:10]
        expected = {ids[row] for row in exact.tolist()}
        near = graph.scores(query, fetch).nearest(100)
        found = [memory_id for memory_id, _ in sorted(near, key=lambda pair: -pair[1])[:10]]
        recalls.append(len(expected & set(found)) / 10)
    assert isinstance(graph, ApproximateVectors)
    return statistics.mean(recalls)


def scale_recall_postgres(url: str, tag: str, queries: list[str], ef_search: list[int]) -> dict[str, Any]:
    """recall@10 of the server's HNSW index against exact search over the same rows: the store's
    `nearest` (its `hnsw.ef_search`, HNSW_EF_SEARCH) asked for the VECTOR_CANDIDATES a search asks
    for, and for 10 alone; exact is every current vector of the space (read in binary) times the
    query, in numpy. With `ef_search`, the same again from stores whose connections set those
    values instead (recall, and the p50 of one `nearest` call, round trip included)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from bli_memory.door.store.postgres import connection as postgres_connection
    from bli_memory.door.store.postgres.store import PostgresStore

    embedder, _ = load_embedder("onnx", os.environ)
    store = open_store(url)
    team_id = next(iter({t for t, space in store.spaces(1000) if space == tag}), None)
    store.close()
    assert team_id is not None, f"no space {tag} in {url}"
    ids: list[str] = []
    with psycopg.connect(url) as conn:
        register_vector(conn)
        with conn.cursor(binary=True) as cursor:
            cursor.execute(
                """SELECT id, embedding FROM memories WHERE team_id = %s AND container_tag = %s
                   AND status = 'current' AND pinned = 0 AND embedding_model = %s""",
                (team_id, tag, embedder.name),
            )
            chunks = []
            while batch := cursor.fetchmany(50_000):
                ids.extend(row[0] for row in batch)
                chunks.append(np.vstack([np.asarray(row[1].to_numpy(), dtype=np.float32) for row in batch]))
    matrix = np.vstack(chunks)
    del chunks
    vectors = embedder.embed(queries, kind="query")
    expected = [
        {ids[row] for row in np.argpartition(-(matrix @ vector), 10)[:10].tolist()} for vector in vectors
    ]
    del matrix
    default = postgres_connection.HNSW_EF_SEARCH
    result: dict[str, Any] = {"ef_search": []}
    for ef in [default, *(value for value in ef_search if value != default)]:
        postgres_connection.HNSW_EF_SEARCH = ef  # read by each new connection of the store's pool
        try:
            searching = PostgresStore(url)
            door, alone, took = [], [], []
            for vector, truth in zip(vectors, expected, strict=True):
                started = time.perf_counter()
                asked = searching.nearest(team_id, tag, embedder.name, vector, VECTOR_CANDIDATES) or []
                took.append((time.perf_counter() - started) * 1000)
                door.append(len(truth & {memory_id for memory_id, _ in asked[:10]}) / 10)
                ten = searching.nearest(team_id, tag, embedder.name, vector, 10) or []
                alone.append(len(truth & {memory_id for memory_id, _ in ten}) / 10)
            searching.close()
        finally:
            postgres_connection.HNSW_EF_SEARCH = default
        if ef == default:
            result.update(recall=statistics.mean(door), recall_k10=statistics.mean(alone))
        result["ef_search"].append(
            (ef, statistics.mean(door), statistics.mean(alone), statistics.median(took))
        )
    return result


def scale_start_parts(url: str, tag: str) -> dict[str, float]:
    """Where a door's start goes, in-process and one part at a time, as `serve` and its warm-up do
    them: the embedder, the store, which spaces to warm, the space's rows for the keyword index,
    and the index's build (on PostgreSQL the vectors stay in the server: nothing else is built)."""
    from bli_memory.door.config import EmbedderConfig
    from bli_memory.door.embed import door_embedder
    from bli_memory.door.keyword import KeywordIndex

    parts: dict[str, float] = {}
    started = time.perf_counter()
    door_embedder(EmbedderConfig.from_env("onnx", os.environ))
    parts["embedder"] = time.perf_counter() - started
    started = time.perf_counter()
    store = open_store(url)
    parts["open store"] = time.perf_counter() - started
    started = time.perf_counter()
    team_id = next(team for team, space in store.spaces(1000) if space == tag)
    parts["Store.spaces"] = time.perf_counter() - started
    started = time.perf_counter()
    rows = list(store.index_rows(team_id, tag))
    parts["Store.index_rows"] = time.perf_counter() - started
    store.close()
    started = time.perf_counter()
    KeywordIndex.build((row.id, row.content, row.device_id, row.updated_at) for row in rows)
    parts["KeywordIndex.build"] = time.perf_counter() - started
    return parts


def scale_bench(
    size: int,
    db: str,
    pool: np.ndarray,
    queries: int,
    ef_search: list[int] | None = None,
    start_parts: bool = False,
) -> dict[str, Any]:
    url, tag = scale_store(db, size)
    sys.stderr.write(f"size {size:,}: {url} tag {tag}\n")
    postgres = url.startswith(("postgresql://", "postgres://"))
    result: dict[str, Any] = {"size": size, "cold_ready_s": None}
    if postgres:  # the server holds the vectors; the door keeps its keyword snapshot in a folder
        token, result["bulk_rate"], result["pg"] = scale_seed_postgres(url, tag, size, pool)
        database = url.partition("?")[0].rsplit("/", 1)[1]
        index_folder = Path(tempfile.gettempdir()) / "bli-bench-scale" / f"{database}.indexes"
    else:
        token, result["bulk_rate"] = scale_seed(url, tag, size, pool)
        index_folder = Path(url + ".indexes")
    # no snapshot yet: a door builds its indexes (a PostgreSQL door writes none below the size)
    snapshots_kept = not postgres or size >= IndexLimits.from_env(os.environ).snapshot_min_memories
    if snapshots_kept and not list(index_folder.glob("*.json")):
        sys.stderr.write("  cold start: the door builds its indexes from the store\n")
        door = ScaleDoor(url, index_folder)
        if not door.indexed.wait(COLD_READY_WAIT_S):
            raise SystemExit("the door did not finish building its indexes")
        result["cold_ready_s"] = door.indexed_s
        if postgres:  # it writes its snapshot right after the build, answering meanwhile
            written = door.wait_line(WROTE, COLD_READY_WAIT_S)
            sys.stderr.write(f"  cold start: {written.strip()}\n")
        result["cold_peak_mib"] = door.memory_mib()[1]
        result["stop_s"] = door.stop()
        sys.stderr.write(f"  cold door stopped in {result['stop_s']:.1f} s (its snapshots written)\n")
    door = ScaleDoor(url, index_folder)
    try:
        if not door.indexed.wait(COLD_READY_WAIT_S):
            raise SystemExit("the door did not finish building its indexes")
        result["listen_s"] = door.listen_s
        result["ready_s"] = door.indexed_s
        host, port = door.address
        conn = http.client.HTTPConnection(host, port, timeout=120)
        rng = random.Random(7)
        search_bodies: list[dict[str, object]] = [
            {"q": query(rng), "containerTag": tag} for _ in range(queries)
        ]
        timed_calls(conn, token, "/api/memory/search", search_bodies[:10])
        search = timed_calls(conn, token, "/api/memory/search", search_bodies)
        save_bodies: list[dict[str, object]] = [
            {"content": sentence(rng, size + index) + " fresh", "containerTag": tag}
            for index in range(SCALE_SAVES)
        ]
        save = timed_calls(conn, token, "/api/memory/save", save_bodies)
        result.update(
            search_p50=statistics.median(search),
            search_p95=percentile(search, 0.95),
            save_p50=statistics.median(save),
        )
        result["rss_mib"], result["peak_mib"] = door.memory_mib()
    finally:
        door.stop()
    if start_parts:
        result["start_parts"] = scale_start_parts(url, tag)
    recall_rng = random.Random(13)
    recall_queries = [query(recall_rng) for _ in range(RECALL_QUERIES)]
    if postgres:
        result.update(scale_recall_postgres(url, tag, recall_queries, ef_search or []))
    else:
        result["recall"] = scale_recall(url, tag, index_folder, recall_queries)
    result["snapshot_mib"] = sum(path.stat().st_size for path in index_folder.glob("*")) / 2**20
    return result


def scale_main(args: argparse.Namespace, sizes: list[int]) -> int:
    pool = vector_pool(args.pool, args.pool_size)
    print(
        f"a big space over HTTP, packaged embedder, {args.queries} searches and {SCALE_SAVES} saves each "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus); each row as its size finishes"
    )
    print(
        "| memories | bulk import /s | cold start to ready s | cold peak RSS MiB | start to ready s "
        "| search p50 ms | search p95 ms | save p50 ms | RSS MiB | peak RSS MiB | recall@10 | snapshot MiB "
        "| load average |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|", flush=True)

    def number(value: float | None, form: str) -> str:
        return "–" if value is None else format(value, form)

    for size in sizes:
        row = scale_bench(size, args.db, pool, args.queries, args.ef_search, args.start_parts)
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
        print(
            f"| {row['size']:,} | {number(row['bulk_rate'], ',.0f')} | {number(row['cold_ready_s'], '.1f')} | "
            f"{number(row.get('cold_peak_mib'), ',.0f')} | {row['ready_s']:.1f} | {row['search_p50']:.1f} | "
            f"{row['search_p95']:.1f} | {row['save_p50']:.1f} | {row['rss_mib']:,.0f} | {row['peak_mib']:,.0f} | "
            f"{number(row['recall'], '.3f')} | {number(row['snapshot_mib'], ',.0f')} | {load} |",
            flush=True,
        )
        if "start_parts" in row:
            parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in row["start_parts"].items())
            print(f"a start's parts at {row['size']:,}, in-process: {parts}", flush=True)
        if "pg" in row:
            pg = row["pg"]
            print(
                f"PostgreSQL at {row['size']:,}: COPY {number(pg.get('copy_s'), '.1f')} s, ANALYZE "
                f"{number(pg.get('analyze_s'), '.1f')} s, HNSW build {number(pg.get('index_s'), '.1f')} s "
                f"({PG_INDEX_SETTINGS}); table {pg['table_mib']:,.0f} MiB, HNSW index {pg['index_mib']:,.0f} MiB, "
                f"database {pg['database_mib']:,.0f} MiB; recall@10 of {RECALL_QUERIES} queries: "
                f"{row['recall']:.3f} as a search asks (top 10 of the nearest {VECTOR_CANDIDATES}), {row['recall_k10']:.3f} "
                "asking for 10",
                flush=True,
            )
            for ef, recall, recall_k10, took in row["ef_search"]:
                print(
                    f"  hnsw.ef_search {ef}: recall@10 {recall:.3f} (asking for 10: {recall_k10:.3f}), "
                    f"nearest {VECTOR_CANDIDATES} p50 {took:.1f} ms",
                    flush=True,
                )
    return 0


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
    parser.add_argument("--scale", action="store_true", help="the big-space mode (see above)")
    parser.add_argument(
        "--db",
        help="a PostgreSQL server (postgresql:// URL with the right to create databases), or pgserver "
        "for a throwaway one; default: a SQLite file per size. With --scale: a folder for the SQLite "
        "files (kept between runs; default bli-bench-scale in the temporary folder) or a postgresql:// URL",
    )
    parser.add_argument(
        "--pool",
        type=Path,
        default=Path(tempfile.gettempdir()) / "bli-bench-pool.npy",
        help="--scale: the .npy of pool embeddings (computed once when missing)",
    )
    parser.add_argument("--pool-size", type=int, default=16_000, help="--scale: distinct texts embedded")
    parser.add_argument(
        "--start-parts",
        action="store_true",
        help="--scale: also time a start's parts in-process (the store's rows, the keyword index's build)",
    )
    parser.add_argument(
        "--ef-search",
        default="",
        help="--scale on PostgreSQL: more hnsw.ef_search values to measure recall@10 at (e.g. 400,800), "
        "beside the store's own",
    )
    args = parser.parse_args()
    global REUSE_VECTORS
    REUSE_VECTORS = args.reuse_vectors
    try:
        sizes = [int(size) for size in args.sizes.split(",")]
    except ValueError:
        parser.error("--sizes takes integers, e.g. 10000,100000")
    try:
        args.ef_search = [int(value) for value in args.ef_search.split(",") if value]
    except ValueError:
        parser.error("--ef-search takes integers, e.g. 400,800")
    if args.scale:
        if args.db is None:
            args.db = str(Path(tempfile.gettempdir()) / "bli-bench-scale")
        return scale_main(args, sizes)
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
