"""Index snapshots of a SQLite door, through the real door over a real file: a door that wrote and
was killed (SIGKILL) starts from the snapshot it had, replays its writes from the file's change log
onto the keyword index and the graph (no build of either) and ranks exactly as a freshly built door
(same hits, same scores); a log pruned past the snapshot's position makes the door build, with one
line on stderr, and answer right."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import numpy as np

from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore
from tests.helpers import DoorProcess

TAG = "space"
FACTS = [
    f"{subject} {verb} {thing}"
    for subject in ("The billing service", "Our CI pipeline", "The mobile app", "The search index")
    for verb in ("depends on", "was migrated to", "logs to")
    for thing in ("PostgreSQL 16", "Redis 7", "Kafka topic orders")
]  # 36 memories
QUERIES = (
    "which database does billing use",
    "where do CI logs go",
    "message queue",
    # a question asking for no kind of answer (answer_kind.py): the channels alone rank it
    "do cats sleep much",
)
#: a snapshot from this many memories; a graph from as many vectors
SMALL = {"BLI_MEMORY_SNAPSHOT_MIN_MEMORIES": "12", "BLI_MEMORY_ANN_MIN_VECTORS": "12"}
#: no graph is ever built: a graph a door holds was read from its snapshot
NO_GRAPH_BUILDS = {**SMALL, "BLI_MEMORY_ANN_MIN_VECTORS": str(10**9)}

Ranking = list[list[tuple[str, float | None, float]]]


def _ranking(door: DoorProcess) -> Ranking:
    answers = []
    for q in QUERIES:
        status, body = door.post("/api/memory/search", {"q": q, "containerTag": TAG, "limit": 20})
        assert status == 200, body
        answers.append([(hit["id"], hit["similarity"], hit["score"]) for hit in body["results"]])
    return answers


def _save(door: DoorProcess, content: str) -> str:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": TAG})
    assert status == 201, body
    return str(body["id"])


def _stamp(folder: Path) -> dict[str, object]:
    [path] = folder.glob("*.json")
    stamp = json.loads(path.read_text())
    assert isinstance(stamp, dict)
    return stamp


def _restart(door: DoorProcess) -> None:
    """Start `door` again on its file and wait until it has indexed its space."""
    door.lines.clear()
    door.start()
    door.wait_for_log("bli-memory-door indexed 1 spaces", 60.0, at_start=True)


def _stopped_with_facts(start_door: Callable[..., DoorProcess]) -> tuple[DoorProcess, Ranking, Path]:
    """A door that saved FACTS and held its space's index (so its stop wrote the snapshot), stopped:
    the door, its ranking before the stop, and its snapshot folder."""
    door = start_door(env=SMALL)
    for fact in FACTS:
        _save(door, fact)
    ranking = _ranking(door)
    door.stop()
    return door, ranking, Path(str(door.db) + ".indexes")


def test_a_sqlite_door_killed_after_writing_starts_from_its_snapshot_and_ranks_as_a_fresh_build(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "onnx", env=SMALL)
    for fact in FACTS:
        _save(door, fact)
    _ranking(door)
    door.stop()  # the snapshot, with its graph, is written on the way out
    folder = Path(str(door.db) + ".indexes")
    written = _stamp(folder)
    assert written["vectors"] == len(FACTS) and written["database"] != ""

    door.extra_env = NO_GRAPH_BUILDS
    _restart(door)
    cats = _save(door, "Feline companions nap for most of the afternoon")
    for index in range(9):
        _save(door, f"The build cache was cleared on day {index}")
    status, _ = door.post("/api/memory/forget", {"containerTag": TAG, "content": FACTS[0]})
    assert status == 200
    door.kill()  # SIGKILL after writing: nothing written on the way out
    assert _stamp(folder) == written  # the stamp outlived the writes: the change log has them

    _restart(door)
    replayed = _ranking(door)
    assert replayed[3][0][0] == cats  # found by meaning only: through the replayed graph
    assert FACTS[0] not in json.dumps(replayed)
    assert not any("not used" in line or "index snapshots" in line for line in door.lines), door.lines
    door.stop()  # writes the snapshot again: a graph only if the door held one (it never builds one)
    rewritten = _stamp(folder)
    assert rewritten["vectors"] == len(FACTS) + 10 - 1 and rewritten["memories"] == len(FACTS) + 10 - 1
    assert isinstance(rewritten["position"], int) and rewritten["position"] > int(str(written["position"]))

    shutil.rmtree(folder)  # a freshly built door over the same file
    door.extra_env = SMALL
    _restart(door)
    assert _ranking(door) == replayed
    door.stop()


def test_a_log_pruned_past_the_snapshot_s_position_makes_the_door_build_with_one_line(
    start_door: Callable[..., DoorProcess],
) -> None:
    door, _, folder = _stopped_with_facts(start_door)
    assert _stamp(folder)["vectors"] is None  # no embedder, no graph
    # another program writes while the door is stopped, keeping a short log
    other = MemoryService(SqliteStore(door.db, change_log_keep_commits=2))
    principal = other.authenticate(door.token)
    assert principal is not None
    for index in range(8):
        other.save(principal, TAG, f"The deploy queue drained batch {index}")
    other.close()

    door.lines.clear()
    door.start()
    door.wait_for_log(
        "bli-memory-door wrote 1 index snapshots", 60.0, at_start=True
    )  # built at start, written at once
    refused = [line for line in door.lines if "not used" in line]
    assert len(refused) == 1 and "change log no longer reaches back" in refused[0], door.lines
    built = _ranking(door)
    status, body = door.post(
        "/api/memory/search", {"q": "deploy queue batch", "containerTag": TAG, "limit": 40}
    )
    assert status == 200 and sum("drained batch" in hit["content"] for hit in body["results"]) == 8
    door.stop()
    shutil.rmtree(folder)
    _restart(door)
    assert _ranking(door) == built
    door.stop()


def test_a_snapshot_written_before_the_file_had_a_change_log_is_read_after_the_upgrade(
    start_door: Callable[..., DoorProcess],
) -> None:
    door, before, folder = _stopped_with_facts(start_door)
    [stamp] = folder.glob("*.json")
    old = {k: v for k, v in json.loads(stamp.read_text()).items() if k not in ("database", "position")}
    stamp.write_text(json.dumps(old))  # as a door of schema 5 wrote it
    with closing(sqlite3.connect(door.db)) as db:  # and the file as that door left it
        db.execute("DROP INDEX memories_documents_age")
        db.execute("DROP TABLE bli_change_log")
        db.execute("DROP TABLE bli_changes")
        db.execute("PRAGMA user_version = 5")
        db.commit()

    door.lines.clear()
    door.start()  # migrates the file to 7, reads the snapshot as of the log's start
    door.wait_for_log("bli-memory-door indexed 1 spaces", 60.0, at_start=True)
    assert _ranking(door) == before
    assert not any("not used" in line or "index snapshots" in line for line in door.lines), door.lines
    kept = _save(door, "The deploy queue drained overnight")
    door.kill()
    door.lines.clear()
    door.start()  # the old stamp, replayed from the log's start
    door.wait_for_log("bli-memory-door indexed 1 spaces", 60.0, at_start=True)
    got = _ranking(door)
    assert not any("not used" in line or "index snapshots" in line for line in door.lines), door.lines
    status, body = door.post(
        "/api/memory/search", {"q": "drained overnight", "containerTag": TAG, "limit": 3}
    )
    assert status == 200 and body["results"][0]["id"] == kept
    door.stop()
    shutil.rmtree(folder)
    _restart(door)
    assert _ranking(door) == got
    door.stop()


def test_a_stop_with_nothing_changed_leaves_the_snapshot_as_it_was(
    start_door: Callable[..., DoorProcess],
) -> None:
    """A door that only read since its snapshot does not write it again on the way out (a million
    memories' snapshot is 900 MB and about 6 s); one that wrote does."""
    door, _, folder = _stopped_with_facts(start_door)  # its index was held: the stop wrote its snapshot
    files = sorted(folder.iterdir())
    before = {path.name: path.stat().st_mtime_ns for path in files}

    _restart(door)
    _ranking(door)
    door.stop()
    assert {path.name: path.stat().st_mtime_ns for path in sorted(folder.iterdir())} == before

    _restart(door)
    _save(door, "The deploy queue drained its last batch")
    door.stop()
    stamp = _stamp(folder)
    assert stamp["memories"] == len(FACTS) + 1
    assert {path.name: path.stat().st_mtime_ns for path in sorted(folder.iterdir())} != before


def test_a_graph_built_while_the_door_serves_is_written_before_any_stop(
    start_door: Callable[..., DoorProcess],
) -> None:
    """A space that grows past the graph threshold while the door serves: its worker writes the
    snapshot with the graph within a poll, so a door killed afterwards starts from that graph."""
    door = start_door("--embedder", "onnx", env=SMALL)
    _save(door, FACTS[0])
    _ranking(door)  # the space's indexes exist: the next writes join them and cross the threshold
    for fact in FACTS[1:]:
        _save(door, fact)
    door.wait_for_log("bli-memory-door wrote 1 index snapshots with their graphs", 60.0)
    folder = Path(str(door.db) + ".indexes")
    written = _stamp(folder)
    assert written["vectors"] == len(FACTS) and written["memories"] == len(FACTS)
    before = _ranking(door)
    door.kill()  # SIGKILL: nothing written on the way out

    door.extra_env = NO_GRAPH_BUILDS  # a graph the next door holds can only come from the snapshot
    _restart(door)
    assert _ranking(door) == before
    door.stop()
    assert _stamp(folder)["vectors"] == len(FACTS)  # it held the graph it read


def _rewrite_keyword_file(folder: Path, change: Callable[[dict[str, np.ndarray]], None]) -> None:
    """Rewrite the space's keyword snapshot with `change` applied to its arrays (its stamp and token
    stay: the file is well-formed and the stamp's own, only its content is wrong)."""
    [path] = folder.glob("*.keyword.npz")
    with np.load(path) as loaded:
        arrays = {name: loaded[name].copy() for name in loaded.files}
    change(arrays)
    with path.open("wb") as handle:
        np.savez(handle, **arrays)


def _point_postings_past_the_last_memory(arrays: dict[str, np.ndarray]) -> None:
    arrays["postings"][:] = arrays["alive"].size + 5


def test_a_keyword_snapshot_whose_arrays_disagree_is_rebuilt_with_one_line_and_never_written_back(
    start_door: Callable[..., DoorProcess],
) -> None:
    door, before, folder = _stopped_with_facts(start_door)
    _rewrite_keyword_file(folder, _point_postings_past_the_last_memory)

    for _ in range(2):  # the damage is gone after the first start: the stop writes the rebuilt index
        _restart(door)
        assert _ranking(door) == before
        door.stop()
        refused = [line for line in door.lines if "not used" in line]
        if _ == 0:
            assert len(refused) == 1 and "keyword file is damaged" in refused[0], door.lines
            assert "postings" in refused[0], refused
        else:
            assert refused == [], door.lines


def test_a_space_holding_a_pin_resumes_from_its_snapshot_after_a_kill(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door(env=SMALL)
    for fact in FACTS:
        _save(door, fact)
    status, body = door.post("/api/memory/pin", {"content": "Always run the linters", "containerTag": TAG})
    assert status == 201, body
    _ranking(door)
    door.stop()
    folder = Path(str(door.db) + ".indexes")
    assert _stamp(folder)["memories"] == len(FACTS)  # the pin is never searched: not in the index

    _restart(door)
    kept = _save(door, "The deploy queue drained overnight")
    door.kill()  # SIGKILL: the snapshot on disk is the one of the stop, the change log has the rest
    _restart(door)
    assert not any("not used" in line or "index snapshots" in line for line in door.lines), door.lines
    status, body = door.post(
        "/api/memory/search", {"q": "drained overnight", "containerTag": TAG, "limit": 3}
    )
    assert status == 200 and body["results"][0]["id"] == kept
    door.stop()
