"""What only the PostgreSQL store does: migrate once under its lock, share one job queue between
doors through leases, search vectors with its own index, copy rows to and from SQLite, and never show
a password. The behaviour both stores share is the contract suite's (test_contract.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bli_memory.door.memories import MemoryService
from bli_memory.door.model import hash_text
from bli_memory.door.store.base import COPY_TABLES, NewVersion
from bli_memory.door.store.postgres import SCHEMA_VERSION, PostgresStore
from bli_memory.door.store.sqlite import SqliteStore
from bli_memory.door.store.urls import mask_url
from tests.door.helpers import new_version, store_principal
from tests.door.store.helpers import WordsEmbedder
from tests.helpers import PostgresServer

#: a lease short enough that a test sees it run out.
SHORT_LEASE_S = 0.6


# ---------------------------------------------------------------------------- the URL and its password


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ada:s3cret@db.example:5432/memory", "postgresql://ada:***@db.example:5432/memory"),
        ("postgres://ada:p@ss/w#rd@host/memory", "postgres://ada:***@host/memory"),
        ("postgresql://ada@host/memory", "postgresql://ada@host/memory"),
        ("postgresql:///memory?host=/run/pg", "postgresql:///memory?host=/run/pg"),
        (
            "postgresql://host/memory?user=ada&password=s3cret&sslmode=require",
            "postgresql://host/memory?user=ada&password=***&sslmode=require",
        ),
        ("/var/lib/memory.db", "/var/lib/memory.db"),
    ],
)
def test_a_url_s_password_is_masked(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_the_store_describes_itself_with_the_server_version_and_no_password(postgres: PostgresServer) -> None:
    url = postgres.database("describe_me").replace("postgres:@", "postgres:hunter2-secret@")
    store = PostgresStore(url)  # the test server trusts local connections: the password is not checked
    try:
        assert store.version.startswith("16.")
        assert store.describe().startswith(f"postgresql {store.version} postgresql://postgres:***@")
        assert "hunter2" not in store.describe()
    finally:
        store.close()


# ---------------------------------------------------------------------------- migrations


def test_doors_starting_at_once_migrate_once(postgres: PostgresServer, tmp_path: Path) -> None:
    url = postgres.database_for(tmp_path / "racing")
    start = threading.Barrier(4)
    opened: list[PostgresStore] = []
    failures: list[BaseException] = []

    def open_door() -> None:
        start.wait(10)
        try:
            opened.append(PostgresStore(url))
        except BaseException as exc:  # collected: a thread's exception would otherwise be lost
            failures.append(exc)

    threads = [threading.Thread(target=open_door) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert failures == [] and len(opened) == 4
        assert [store.schema_version() for store in opened] == [SCHEMA_VERSION] * 4
        with opened[0]._connection() as conn:
            rows = conn.execute("SELECT version FROM bli_schema ORDER BY version").fetchall()
        assert [row["version"] for row in rows] == list(range(1, SCHEMA_VERSION + 1))
    finally:
        for store in opened:
            store.close()


def test_a_database_of_a_newer_door_is_refused(stores: Callable[..., PostgresStore]) -> None:
    from bli_memory.door.store.postgres import SchemaTooNew

    first = stores()
    with first._connection() as conn:
        conn.execute("INSERT INTO bli_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaTooNew, match="newer than this door"):
        stores()


# ---------------------------------------------------------------------------- jobs shared by doors


def test_two_doors_claiming_at_once_never_get_the_same_job(stores: Callable[..., PostgresStore]) -> None:
    doors = [stores(), stores()]
    ada = store_principal(doors[0])
    queued = {doors[0].enqueue_job(ada, "t", f"exchange {index}", None) for index in range(40)}
    claims: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(6)

    def drain(store: PostgresStore) -> None:
        start.wait(10)
        while (job := store.claim_job()) is not None:
            with lock:
                claims.append(job.id)
            store.finish_job(job.id, {"added": 0})

    threads = [threading.Thread(target=drain, args=(doors[index % 2],)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(claims) == sorted(queued)  # each once
    for job_id in queued:
        job = doors[1].get_job(ada.team_id, job_id)
        assert job is not None and job.status == "done" and job.attempts == 1


def test_a_job_whose_lease_ran_out_is_finished_by_another_door(stores: Callable[..., PostgresStore]) -> None:
    dead = stores(job_lease_s=SHORT_LEASE_S)
    alive = stores(job_lease_s=SHORT_LEASE_S)
    ada = store_principal(dead)
    job_id = dead.enqueue_job(ada, "t", "an exchange", None)
    claimed = dead.claim_job()
    assert claimed is not None and claimed.id == job_id
    dead._closed.set()  # the door dies: nothing renews its lease any more
    assert alive.claim_job() is None  # the lease holds
    assert alive.requeue_interrupted_jobs(3) == 0  # a starting door does not take a live door's job
    deadline = time.monotonic() + 10 * SHORT_LEASE_S
    taken = None
    while taken is None and time.monotonic() < deadline:
        time.sleep(SHORT_LEASE_S / 4)
        taken = alive.claim_job()
    assert taken is not None and taken.id == job_id and taken.attempts == 2
    assert dead.job_may_write(claimed) is False  # the dead door's late writes are refused
    dead.finish_job(job_id, {"added": 99})
    assert alive.job_may_write(taken) is True
    alive.finish_job(job_id, {"added": 1})
    done = alive.get_job(ada.team_id, job_id)
    assert done is not None and done.status == "done" and done.outcome == {"added": 1}


def test_a_running_door_keeps_its_lease(stores: Callable[..., PostgresStore]) -> None:
    busy = stores(job_lease_s=SHORT_LEASE_S)
    other = stores(job_lease_s=SHORT_LEASE_S)
    ada = store_principal(busy)
    busy.enqueue_job(ada, "t", "a long extraction", None)
    claimed = busy.claim_job()
    assert claimed is not None
    time.sleep(3 * SHORT_LEASE_S)  # three leases long: renewed meanwhile
    assert other.claim_job() is None
    assert busy.job_may_write(claimed) is True


def test_a_job_out_of_attempts_whose_lease_ran_out_fails(stores: Callable[..., PostgresStore]) -> None:
    store = stores(job_lease_s=SHORT_LEASE_S)
    ada = store_principal(store)
    job_id = store.enqueue_job(ada, "t", "kills every door that runs it", None)
    store._closed.set()  # no renewals: every claim's lease runs out
    for attempt in range(1, 4):
        deadline = time.monotonic() + 10 * SHORT_LEASE_S
        claimed = store.claim_job()
        while claimed is None and time.monotonic() < deadline:
            time.sleep(SHORT_LEASE_S / 4)
            claimed = store.claim_job()
        assert claimed is not None and claimed.attempts == attempt
    time.sleep(1.5 * SHORT_LEASE_S)
    assert store.claim_job() is None
    job = store.get_job(ada.team_id, job_id)
    assert job is not None and job.status == "failed" and "interrupted" in (job.error or "")


# ---------------------------------------------------------------------------- vectors


def test_nearest_answers_from_the_space_best_first_with_ties_by_id(
    stores: Callable[..., PostgresStore],
) -> None:
    store = stores()
    ada = store_principal(store)
    other_team = store_principal(store, "eve")
    rows = {
        "north": [1.0, 0.0, 0.0],
        "north again": [1.0, 0.0, 0.0],
        "north-east": [1.0, 1.0, 0.0],
        "east": [0.0, 1.0, 0.0],
        "retired north": [1.0, 0.0, 0.0],
    }
    ids = {}
    for content, vector in rows.items():
        ids[content] = store.insert_version(
            new_version(ada, content, vector=np.array(vector, dtype=np.float32))
        )
    store.retire(ids["retired north"], "forgotten")
    store.insert_version(
        new_version(ada, "another tag", vector=np.ones(3, dtype=np.float32), tag="elsewhere")
    )
    store.insert_version(
        new_version(ada, "another model", vector=np.ones(3, dtype=np.float32), model="model-b")
    )
    found = store.nearest(ada.team_id, "t", "model-a", np.array([1.0, 0.0, 0.0], dtype=np.float32), 3)
    assert found is not None
    tied = sorted([ids["north"], ids["north again"]])
    assert [memory_id for memory_id, _ in found] == [*tied, ids["north-east"]]
    assert found[0][1] == pytest.approx(1.0) and found[2][1] == pytest.approx(2**-0.5)
    assert store.nearest(other_team.team_id + 100, "t", "model-a", np.ones(3, dtype=np.float32), 3) == []
    assert (
        SqliteStore(":memory:").nearest(ada.team_id, "t", "model-a", np.ones(3, dtype=np.float32), 3) is None
    )


def test_a_pin_is_never_a_nearest_neighbour_nor_given_a_similarity(
    stores: Callable[..., PostgresStore],
) -> None:
    """Pins are never searched: the store's own vector search leaves them out as `current_vectors` does."""
    store = stores()
    ada = store_principal(store)
    north = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    pin = store.insert_version(
        replace(new_version(ada, "pinned north", vector=north), metadata={"pinned": True})
    )
    plain = store.insert_version(
        new_version(ada, "plain north-east", vector=np.array([1.0, 1.0, 0.0], dtype=np.float32))
    )
    found = store.nearest(ada.team_id, "t", "model-a", north, 5)
    assert found is not None and [memory_id for memory_id, _ in found] == [plain]
    similar = store.similarities(ada.team_id, "model-a", north, [pin, plain])
    assert similar is not None and set(similar) == {plain}


def test_the_vector_index_finds_what_exact_search_finds(stores: Callable[..., PostgresStore]) -> None:
    """Recall@10 of `nearest` against exact cosine search over the same rows: at least 0.95."""
    store = stores()
    ada = store_principal(store)
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((20, 64))
    vectors = centres[rng.integers(0, 20, 1500)] + 0.4 * rng.standard_normal((1500, 64))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    with store.transaction():
        ids = [
            store.insert_version(new_version(ada, f"row {index}", vector=vector))
            for index, vector in enumerate(vectors)
        ]
    found = 0
    for query in vectors[rng.integers(0, 1500, 40)] + np.float32(0.05):
        query = (query / np.linalg.norm(query)).astype(np.float32)
        exact = {ids[index] for index in np.argsort(-(vectors @ query), kind="stable")[:10]}
        near = store.nearest(ada.team_id, "t", "model-a", query, 10)
        assert near is not None and len(near) == 10
        found += len(exact & {memory_id for memory_id, _ in near})
    assert found / (40 * 10) >= 0.95


def test_search_ranks_the_same_on_both_stores(database: str, tmp_path: Path) -> None:
    """Keyword, vectors (PostgreSQL's index, SQLite's matrix) and recency fuse to the same hits, in a
    space larger than the vector channel's candidates (so keyword candidates outside them need their
    cosine from the store too)."""
    services = [
        MemoryService(SqliteStore(tmp_path / "memory.db"), WordsEmbedder()),  # type: ignore[arg-type]
        MemoryService(PostgresStore(database), WordsEmbedder()),  # type: ignore[arg-type]
    ]
    words = "cache deploy database index python rust queue worker token search vector memory".split()
    try:
        answers = []
        for service in services:
            ada = store_principal(service.store)
            for index in range(300):
                text = " ".join(words[(index * step) % len(words)] for step in (1, 3, 7)) + f" note {index}"
                service.save(ada, "space", text, created_at=1_700_000_000.0 + index)
            hits = [
                [(hit.memory.content, hit.matched_by) for hit in service.search(ada, "space", q, limit=40)]
                for q in ("deploy the database", "rust worker queue", "vector search memory")
            ]
            scores = [
                [hit.score for hit in service.search(ada, "space", q, limit=40)]
                for q in ("deploy the database", "rust worker queue", "vector search memory")
            ]
            answers.append((hits, scores))
        assert answers[0][0] == answers[1][0]
        assert np.allclose(
            answers[0][1], answers[1][1], atol=1e-6
        )  # float32 sums against PostgreSQL's float64
        assert all(len(hits) == 40 for hits in answers[0][0])
        # SQLite's vectors were searched in a matrix in memory, PostgreSQL's by the server
        assert len(services[0].indexes._vectors) == 1 and len(services[1].indexes._vectors) == 0
    finally:
        for service in services:
            service.close()


# ---------------------------------------------------------------------------- copying rows


def test_rows_copy_both_ways_between_sqlite_and_postgresql(
    stores: Callable[..., PostgresStore], tmp_path: Path
) -> None:
    source = SqliteStore(tmp_path / "source.db")
    ada = store_principal(source)
    source.put_alias(ada.team_id, "old", "t")
    first = source.insert_version(new_version(ada, "first", vector=np.arange(4, dtype=np.float32)))
    memory = source.get(ada.team_id, first)
    assert memory is not None
    source.retire(first, "superseded")
    source.insert_version(
        NewVersion(
            **{**new_version(ada, "second").__dict__, "previous": memory, "metadata": {"pinned": True}}
        )
    )
    source.enqueue_job(ada, "t", "an exchange", {"source": "stop"})
    source.record_experience(ada, entry_id="e1", store="bli", verdict="win", reason="found", created_at=5.0)
    source.put_hook_stats(ada, [("2026-09-06T14", '{"prompt":{"runs":2}}')])
    target = stores()
    back = SqliteStore(tmp_path / "back.db")
    try:
        for table in COPY_TABLES:
            rows = source.dump_rows(table, None, 1000)
            assert rows, table
            assert target.load_rows(table, rows) == len(rows)
            assert target.load_rows(table, rows) == 0  # already there: left alone
            assert target.dump_rows(table, None, 1000) == rows
            assert back.load_rows(table, target.dump_rows(table, None, 1000)) == len(rows)
            assert back.dump_rows(table, None, 1000) == rows
        paged = target.dump_rows("memories", (1,), 10)
        assert [row["content"] for row in paged] == ["second"]
        # numbering goes on past the copied rows
        bob = store_principal(target, "bob")
        assert bob.person_id > ada.person_id
        newer = target.insert_version(new_version(bob, "third"))
        assert [row["id"] for row in target.dump_rows("memories", (2,), 10)] == [newer]
    finally:
        source.close()
        back.close()


# ---------------------------------------------------------------------------- failures


def test_a_statement_past_its_deadline_is_store_unavailable_and_the_store_goes_on(
    stores: Callable[..., PostgresStore], database: str
) -> None:
    import psycopg

    from bli_memory.door.errors import StoreUnavailable

    store = stores(statement_timeout_s=0.3)
    ada = store_principal(store)
    with psycopg.connect(database) as blocker:  # another session holds the table for a while
        blocker.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="statement_timeout"):
            store.count_current(ada.team_id, ["t"])
        assert time.monotonic() - started < 5
    assert store.count_current(ada.team_id, ["t"]) == 0


def test_a_full_disk_is_store_full_and_damage_is_recognised(stores: Callable[..., PostgresStore]) -> None:
    import psycopg

    from bli_memory.door.errors import StoreFull

    store = stores()
    assert store.write_problem() is None
    full = store._map_error(psycopg.errors.DiskFull("could not extend file: No space left on device"))
    assert isinstance(full, StoreFull)
    assert "full" in (store.write_problem() or "")  # /healthz says so for a while
    damaged = psycopg.errors.DataCorrupted("invalid page in block 7")
    assert store.is_damage(damaged) is True
    assert store.is_damage(psycopg.errors.UniqueViolation("duplicate key")) is False


def test_lookups_by_id_use_the_id_index_right_after_a_bulk_load(stores: Callable[..., PostgresStore]) -> None:
    """Before PostgreSQL has statistics on freshly loaded rows (a migrate, an import), the planner
    answered `team_id = … AND id = ANY(…)` from the team index and read every row of the team per
    search; the lookup is written so that only the id index can answer it."""
    from bli_memory.door.store.postgres.memories import UPDATED_AT_BY_IDS_SQL

    store = stores()
    ada = store_principal(store)
    rows = [
        {
            "rowid": index + 1,
            "id": f"mem_{index:024x}",
            "team_id": ada.team_id,
            "container_tag": "t",
            "custom_id": None,
            "content": f"note {index}",
            "content_hash": hash_text(f"note {index}"),
            "kind": "memory",
            "status": "current",
            "version": 1,
            "root_id": f"mem_{index:024x}",
            "previous_version_id": None,
            "pinned": 0,
            "metadata": None,
            "person_id": ada.person_id,
            "device_id": ada.device_id,
            "created_at": 1000.0 + index,
            "updated_at": 1000.0 + index,
            "superseded_at": None,
            "embedding": None,
            "embedding_model": None,
        }
        for index in range(5000)
    ]
    assert store.load_rows("memories", rows) == 5000
    wanted = [f"mem_{index:024x}" for index in (7, 4242)]
    with store._connection() as db:
        plan = db.execute("EXPLAIN " + UPDATED_AT_BY_IDS_SQL, (wanted, ada.team_id)).fetchall()
    text = " ".join(str(next(iter(row.values()))) for row in plan)
    assert "memories_id_key" in text, text
    assert store.updated_at(ada.team_id, wanted) == {wanted[0]: 1007.0, wanted[1]: 5242.0}
