"""A space's vectors in memory: the exact matrix stays equal to its rows through any mix of saves and
removals; past the threshold the space is searched through an HNSW graph that finds the same rows
and reads its writes; big spaces' indexes are kept as snapshots that are used only while current."""

from __future__ import annotations

import gc
import json
import os
import stat
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bli_memory.door.embed import Embedder, load_embedder
from bli_memory.door.indexes import IndexLimits
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal
from bli_memory.door.store.sqlite import SqliteStore
from bli_memory.door.vectors import ApproximateVectors, SpaceVectors
from tests.door.helpers import device_principal

DIM = 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=120))
def test_cache_matches_a_plain_dict(operations: list[tuple[bool, int]]) -> None:
    cache = SpaceVectors(ids=[], matrix=np.zeros((0, DIM), dtype=np.float32))
    expected: dict[str, np.ndarray] = {}
    for add, key in operations:
        memory_id = f"mem_{key}"
        if add and memory_id not in expected:
            vector = np.full(DIM, key, dtype=np.float32)
            cache.add(memory_id, vector)
            expected[memory_id] = vector
        elif not add:
            cache.remove(memory_id)
            expected.pop(memory_id, None)
    assert sorted(cache.ids) == sorted(expected)
    assert cache.matrix.shape == (len(expected), DIM)
    for memory_id, row in cache.index.items():
        assert cache.ids[row] == memory_id
        assert np.array_equal(cache.matrix[row], expected[memory_id])


# ------------------------------------------------------------------ the approximate index and snapshots


TAG = "repo_big"
#: past this many vectors a space is searched through its graph; a snapshot is written from this many
SMALL = IndexLimits(ann_min_vectors=12, snapshot_min_memories=12)
FACTS = [
    f"{subject} {verb} {thing}"
    for subject in ("The billing service", "Our CI pipeline", "The mobile app", "The search index")
    for verb in ("depends on", "was migrated to", "logs to")
    for thing in ("PostgreSQL 16", "Redis 7", "Kafka topic orders")
]  # 36 memories
QUERIES = ["which database does billing use", "where do CI logs go", "mobile app cache", "message queue"]


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    embedder, reason = load_embedder("onnx", env={})
    assert reason is None, reason
    return embedder


def _service(
    db: Path, embedder: Embedder, limits: IndexLimits | None = SMALL, folder: bool = True
) -> MemoryService:
    index_folder = db.with_name(db.name + ".indexes") if folder else None
    return MemoryService(SqliteStore(db), embedder, index_folder=index_folder, index_limits=limits)


def _principal(service: MemoryService) -> Principal:
    return device_principal(service)


def _ranking(service: MemoryService, principal: Principal, q: str) -> list[tuple[str, float | None]]:
    return [(hit.memory.content, hit.similarity) for hit in service.search(principal, TAG, q, limit=10)]


def _forbid_builds(monkeypatch: pytest.MonkeyPatch, service: MemoryService) -> None:
    """Make any build of `service`'s indexes from the store fail the test: what it holds must come
    from its snapshot."""

    def no_build(*_: object) -> object:
        raise AssertionError("built from the store although the snapshot is current")

    monkeypatch.setattr(service.store, "index_rows", no_build)
    monkeypatch.setattr(service.store, "current_vectors", no_build)


def _vectors_of(service: MemoryService, principal: Principal) -> object:
    return service.indexes._vectors.peek((principal.team_id, TAG))


def test_a_space_turns_to_a_graph_at_the_threshold_and_ranks_as_exact_search(
    tmp_path: Path, minilm: Embedder
) -> None:
    graph = _service(tmp_path / "graph.db", minilm)
    exact = _service(tmp_path / "exact.db", minilm, limits=IndexLimits(10**9, 10**9))
    one, two = _principal(graph), _principal(exact)
    for number, fact in enumerate(FACTS):
        graph.save(one, TAG, fact)
        exact.save(two, TAG, fact)
        if number == 0:
            graph.search(one, TAG, "warm the indexes")
        if number == SMALL.ann_min_vectors - 2:  # one short of the threshold: still the matrix
            matrix = _vectors_of(graph, one)
            assert isinstance(matrix, SpaceVectors)
            matrix_alive = weakref.ref(matrix)
            del matrix
    assert graph.indexes.wait_for_conversions(30)
    assert isinstance(_vectors_of(graph, one), ApproximateVectors)
    gc.collect()
    assert matrix_alive() is None  # the float32 matrix is let go once the graph holds the rows
    assert len(_vectors_of(graph, one)) == len(FACTS)  # type: ignore[arg-type]
    for q in QUERIES:
        # the same memories in the same order with the same cosines: the graph only finds the rows
        assert _ranking(graph, one, q) == _ranking(exact, two, q), q
    graph.close()
    exact.close()


def test_a_big_space_without_snapshot_is_searched_exactly_until_its_graph_is_built(
    tmp_path: Path, minilm: Embedder
) -> None:
    service = _service(tmp_path / "memory.db", minilm, folder=False)
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    service.close()
    reopened = _service(tmp_path / "memory.db", minilm, folder=False)
    with reopened.writer.lock:  # the thread cannot copy a row meanwhile: the search is the matrix's
        exact = _ranking(reopened, principal, QUERIES[0])
        assert isinstance(_vectors_of(reopened, principal), SpaceVectors)
        saved = reopened.save(principal, TAG, "Feline companions nap for most of the afternoon")
    assert reopened.indexes.wait_for_conversions(30)
    assert isinstance(_vectors_of(reopened, principal), ApproximateVectors)
    assert [content for content, _ in _ranking(reopened, principal, QUERIES[0])] == [c for c, _ in exact]
    # the save made while the graph was being built is in it
    # a question asking for no kind of answer (answer_kind.py): the channels alone rank it
    assert reopened.search(principal, TAG, "do cats sleep much", limit=1)[0].memory.id == saved.id
    reopened.close()


def test_the_graph_reads_its_writes(tmp_path: Path, minilm: Embedder) -> None:
    service = _service(tmp_path / "memory.db", minilm)
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    service.search(principal, TAG, "warm")
    assert service.indexes.wait_for_conversions(30)
    assert isinstance(_vectors_of(service, principal), ApproximateVectors)
    # found by meaning alone (no word in common with the query), at once
    saved = service.save(principal, TAG, "Feline companions nap for most of the afternoon")
    query = "do cats sleep much"
    hits = service.search(principal, TAG, query, limit=3)
    assert hits[0].memory.id == saved.id and hits[0].matched_by == ("vector",)
    updated = service.update(principal, saved.id, "Kittens doze through most afternoons")
    ids = [hit.memory.id for hit in service.search(principal, TAG, query, limit=10)]
    assert ids[0] == updated.id and saved.id not in ids
    service.forget(principal, TAG, memory_id=updated.id)
    assert updated.id not in [hit.memory.id for hit in service.search(principal, TAG, query, limit=50)]
    service.close()


def test_a_snapshot_is_written_privately_on_close_and_read_back_instead_of_building(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "memory.db"
    service = _service(db, minilm)
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    before = {q: _ranking(service, principal, q) for q in QUERIES}
    service.close()
    folder = db.with_name("memory.db.indexes")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = sorted(path.name.split(".", 1)[1] for path in folder.iterdir())
    assert files == ["ids", "json", "keyword.npz", "usearch"]
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in folder.iterdir())
    reopened = _service(db, minilm)

    _forbid_builds(monkeypatch, reopened)
    assert {q: _ranking(reopened, principal, q) for q in QUERIES} == before
    # the keyword postings were mapped from the file, not read into objects per word
    [(_, keyword_index)] = reopened.indexes._keyword.items()
    assert isinstance(keyword_index._slots, np.memmap)
    reopened.close()


def test_a_door_killed_after_writing_replays_its_writes_onto_its_snapshot(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "memory.db"
    service = _service(db, minilm)
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    service.warm()  # what the door does at start: the indexes exist, and are written on close
    service.close()
    [stamp] = db.with_name("memory.db.indexes").glob("*.json")
    written = stamp.read_bytes()
    crashed = _service(db, minilm)
    crashed.warm()
    saved = crashed.save(principal, TAG, "Feline companions nap for most of the afternoon")
    crashed.forget(principal, TAG, content=FACTS[3])
    assert stamp.read_bytes() == written  # the stamp outlives the writes: the log has them
    crashed.store.close()  # the door dies without closing: no snapshot written on the way out

    after = _service(db, minilm)
    _forbid_builds(monkeypatch, after)  # the snapshot and the log are current
    got = {q: _ranking(after, principal, q) for q in [*QUERIES, "do cats sleep much"]}
    graph = _vectors_of(after, principal)
    assert isinstance(graph, ApproximateVectors) and len(graph) == len(FACTS)  # one in, one out
    assert after.indexes.keyword_builds == 0
    assert after.search(principal, TAG, "do cats sleep much", limit=1)[0].memory.id == saved.id
    assert FACTS[3] not in [content for content, _ in got[QUERIES[0]]]
    fresh = _service(db, minilm, folder=False)
    fresh.warm()  # builds the keyword index and the graph from the store
    assert isinstance(_vectors_of(fresh, principal), ApproximateVectors)
    assert {q: _ranking(fresh, principal, q) for q in got} == got
    fresh.close()
    after.close()


def test_a_space_built_at_start_is_written_at_once_and_again_with_its_graph(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "memory.db"
    service = _service(db, minilm, folder=False)
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    service.close()  # no snapshot folder: the next start builds everything
    started = _service(db, minilm)
    started.warm(wait_for_graphs=False)  # what the door does at start
    assert started.write_built_snapshots()[0] == 1
    [stamp] = db.with_name("memory.db.indexes").glob("*.json")
    assert json.loads(stamp.read_text())["vectors"] is None  # the keyword index, at once
    assert started.write_built_graphs(30)[0] == 1
    assert json.loads(stamp.read_text())["vectors"] == len(FACTS)  # and the graph, once built
    assert started.write_built_graphs(30)[0] == 0  # once
    expected = {q: _ranking(started, principal, q) for q in QUERIES}
    started.store.close()  # the door dies without closing: nothing written on the way out

    after = _service(db, minilm)

    _forbid_builds(monkeypatch, after)
    assert {q: _ranking(after, principal, q) for q in QUERIES} == expected
    assert isinstance(_vectors_of(after, principal), ApproximateVectors)
    assert after.indexes.keyword_builds == 0
    after.close()


def test_a_graph_built_while_the_door_serves_is_written_without_waiting_for_the_stop(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A space that grows past the graph threshold while the door serves gets its graph on a thread;
    the door's worker then writes its snapshot (`graphs_waiting`, `write_built_graphs`), so a door
    killed afterwards starts from the graph instead of building it again."""
    db = tmp_path / "memory.db"
    service = _service(db, minilm)
    principal = _principal(service)
    service.save(principal, TAG, FACTS[0])
    service.search(principal, TAG, "warm the indexes")  # the space's indexes exist: writes join them
    assert not service.graphs_waiting
    for fact in FACTS[1:]:
        service.save(principal, TAG, fact)
    assert service.indexes.wait_for_conversions(30)
    assert isinstance(_vectors_of(service, principal), ApproximateVectors)
    assert service.graphs_waiting
    assert service.write_built_graphs(timeout_s=0.0)[0] == 1
    assert not service.graphs_waiting
    [stamp] = db.with_name("memory.db.indexes").glob("*.json")
    assert json.loads(stamp.read_text())["vectors"] == len(FACTS)
    expected = {q: _ranking(service, principal, q) for q in QUERIES}
    service.store.close()  # killed: nothing written on the way out

    after = _service(db, minilm)

    _forbid_builds(monkeypatch, after)
    assert {q: _ranking(after, principal, q) for q in QUERIES} == expected
    assert isinstance(_vectors_of(after, principal), ApproximateVectors)
    after.close()


def test_a_forget_by_meaning_as_a_space_s_first_request_reads_the_graph_from_its_snapshot(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph read back from a snapshot is checked against the keyword index's count: a request
    that needs only the vectors (forget by meaning) loads the keyword index first rather than
    throwing the graph away and building it again."""
    db = tmp_path / "memory.db"
    service = _service(db, minilm)
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    service.search(principal, TAG, "warm the indexes")
    assert service.indexes.wait_for_conversions(30)
    service.close()  # writes the snapshot with its graph

    after = _service(db, minilm)
    monkeypatch.setattr(after.indexes, "_start_conversion", lambda *_: pytest.fail("graph built again"))
    forgotten, match, _ = after.forget(principal, TAG, query="Our CI pipeline logs to Redis 7")
    assert (forgotten.content, match) == ("Our CI pipeline logs to Redis 7", "closest")
    assert isinstance(_vectors_of(after, principal), ApproximateVectors)
    after.close()


def test_a_snapshot_of_another_size_than_the_store_is_not_used(tmp_path: Path, minilm: Embedder) -> None:
    db = tmp_path / "memory.db"
    service = _service(db, minilm)
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    service.warm()  # what the door does at start: the indexes exist, and are written on close
    service.close()
    # another process writes without a snapshot folder (it knows nothing of the snapshot)
    other = _service(db, minilm, folder=False)
    saved = other.save(principal, TAG, "Feline companions nap for most of the afternoon")
    other.close()
    assert list(db.with_name("memory.db.indexes").glob("*.json"))  # still there, but stale
    after = _service(db, minilm)
    hits = after.search(principal, TAG, "do cats sleep much", limit=1)
    assert hits[0].memory.id == saved.id
    after.close()


def test_a_damaged_snapshot_is_rebuilt_from_the_store(tmp_path: Path, minilm: Embedder) -> None:
    db = tmp_path / "memory.db"
    service = _service(db, minilm)
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    before = _ranking(service, principal, QUERIES[0])
    service.close()
    for path in db.with_name("memory.db.indexes").iterdir():
        if path.suffix in (".npz", ".usearch"):
            path.write_bytes(b"not a snapshot")
    after = _service(db, minilm)
    assert _ranking(after, principal, QUERIES[0]) == before
    after.close()


def test_small_spaces_write_no_snapshot(tmp_path: Path, minilm: Embedder) -> None:
    db = tmp_path / "memory.db"
    service = _service(db, minilm, limits=IndexLimits(ann_min_vectors=12, snapshot_min_memories=100))
    principal = _principal(service)
    service.save_many(principal, TAG, FACTS)
    service.search(principal, TAG, "warm")
    service.close()
    assert not db.with_name("memory.db.indexes").exists()


def test_limits_come_from_the_environment_when_positive_numbers() -> None:
    default = IndexLimits.default()
    assert IndexLimits.from_env(
        {"BLI_MEMORY_ANN_MIN_VECTORS": "8", "BLI_MEMORY_SNAPSHOT_MIN_MEMORIES": "9"}
    ) == (IndexLimits(8, 9))
    for bad in ("", "0", "-3", "many"):
        assert IndexLimits.from_env({"BLI_MEMORY_ANN_MIN_VECTORS": bad}) == default
    assert os.environ.get("BLI_MEMORY_ANN_MIN_VECTORS") is None


def test_a_snapshot_of_another_database_at_the_same_path_is_not_used(
    tmp_path: Path, minilm: Embedder
) -> None:
    db = tmp_path / "memory.db"
    first = _service(db, minilm)
    principal = _principal(first)
    first.save_many(principal, TAG, FACTS)
    first.warm()
    first.close()
    for path in tmp_path.glob("memory.db*"):
        if path.is_file():
            path.unlink()  # the database goes; its snapshot folder stays
    assert list(db.with_name("memory.db.indexes").glob("*.json"))
    writer = _service(db, minilm, folder=False)  # another program fills the new database
    other = _principal(writer)
    assert other.team_id == principal.team_id  # the same space key, the same number of memories
    writer.save_many(other, TAG, [fact.replace("The", "A") for fact in FACTS])
    writer.close()
    second = _service(db, minilm)
    hits = second.search(other, TAG, "billing database", limit=3)
    assert hits and all(hit.memory.content.startswith(("A ", "Our", "A")) for hit in hits)
    assert second.store.get(other.team_id, hits[0].memory.id) is not None
    second.close()
