"""Index snapshots of a PostgreSQL door (real PostgreSQL): a door started over its snapshot does not
build its keyword index and ranks exactly as a freshly built door; what any door wrote after the
snapshot's change position (another door while this one was stopped, or this one before it was
killed) is replayed from the change log; a log pruned past that position, a snapshot of another
database, a damaged or foreign file each make the door build from the store instead, with one line
on stderr and the right answers. Through the real door: the folder under the data home (no
password in its name), `--index-dir` and BLI_MEMORY_INDEX_DIR, 0700 and 0600, a snapshot written
right after a start's build so that a killed door's next start reads it."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bli_memory.door.config import index_folder
from bli_memory.door.indexes import IndexLimits
from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal
from bli_memory.door.snapshots import space_file_stem
from bli_memory.door.store.postgres import PostgresStore
from tests.helpers import DoorProcess, PostgresServer

TAG = "space"
WORDS = "cache deploy database index python rust queue worker token search vector memory".split()
QUERIES = ("deploy the database", "rust worker queue", "vector search memory", "note 7")
#: a space of this many memories or more gets a snapshot in these tests
SMALL = IndexLimits(ann_min_vectors=10**9, snapshot_min_memories=5)

Ranking = list[list[tuple[str, float, tuple[str, ...]]]]


def _text(index: int) -> str:
    return " ".join(WORDS[(index * step) % len(WORDS)] for step in (1, 3, 7)) + f" note {index}"


@pytest.fixture
def database(postgres: PostgresServer, tmp_path: Path) -> str:
    return postgres.database_for(tmp_path)


@pytest.fixture
def who(database: str) -> Principal:
    """A device of the test's database (the same principal for every door over it)."""
    store = PostgresStore(database)
    try:
        _, token = store.create_device(person="ada")
        principal = store.authenticate(token)
    finally:
        store.close()
    assert principal is not None
    return principal


@pytest.fixture
def doors(database: str, tmp_path: Path) -> Iterator[Callable[..., MemoryService]]:
    """Memory services over the test's database, each one a door (with the test's snapshot folder
    unless `folder=None`); their stores are closed at teardown (a closed one again is a no-op)."""
    opened: list[MemoryService] = []

    def open_one(
        folder: Path | None = tmp_path / "indexes", url: str | None = None, **options: int
    ) -> MemoryService:
        store = PostgresStore(url or database, **options)  # type: ignore[arg-type]
        service = MemoryService(store, None, index_folder=folder, index_limits=SMALL)
        opened.append(service)
        return service

    yield open_one
    for service in opened:
        service.store.close()


def _ranking(service: MemoryService, who: Principal) -> Ranking:
    return [
        [(hit.memory.id, hit.score, hit.matched_by) for hit in service.search(who, TAG, q, limit=40)]
        for q in QUERIES
    ]


def _seed(service: MemoryService, who: Principal, count: int = 30) -> None:
    for index in range(count):
        service.save(who, TAG, _text(index), created_at=1_700_000_000.0 + index)


def _stamp(folder: Path) -> dict[str, object]:
    [path] = folder.glob("*.json")
    stamp = json.loads(path.read_text())
    assert isinstance(stamp, dict)
    return stamp


def _close(service: MemoryService) -> None:
    """Stop a door as a SIGTERM does: its snapshots are written, its store closed."""
    service.close()


def test_a_door_started_over_its_snapshot_does_not_build_and_ranks_as_a_fresh_build(
    doors: Callable[..., MemoryService], who: Principal, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = doors()
    _seed(first, who)
    first.search(who, TAG, "warm")
    _close(first)
    stamp = _stamp(tmp_path / "indexes")
    assert stamp["memories"] == 30 and isinstance(stamp["position"], int) and stamp["position"] > 0
    assert str(stamp["database"]).startswith("postgresql:")

    again = doors()
    monkeypatch.setattr(again.store, "index_rows", lambda *_: pytest.fail("built from the store"))
    got = _ranking(again, who)
    monkeypatch.undo()
    assert again.indexes.keyword_builds == 0
    fresh = doors(folder=None)
    assert got == _ranking(fresh, who) and fresh.indexes.keyword_builds == 1
    assert all(hits for hits in got)


def test_another_door_s_writes_while_a_door_was_stopped_are_replayed_onto_its_snapshot(
    doors: Callable[..., MemoryService], who: Principal, capsys: pytest.CaptureFixture[str]
) -> None:
    first = doors()
    _seed(first, who)
    saved = [hit.memory.id for hit in first.search(who, "space", "note", limit=40)]
    _close(first)
    other = doors(folder=None)  # door B writes while A is stopped
    for index in range(30, 36):
        other.save(who, TAG, _text(index) + " from b", created_at=1_700_000_100.0 + index)
    other.update(who, saved[3], "the deploy worker moved to rust entirely")
    other.forget(who, TAG, memory_id=saved[5])
    capsys.readouterr()

    restarted = doors()
    got = _ranking(restarted, who)
    assert restarted.indexes.keyword_builds == 0  # the snapshot, brought up to date from the log
    assert capsys.readouterr().err == ""
    fresh = doors(folder=None)
    assert got == _ranking(fresh, who)
    contents = {hit.memory.content for hit in restarted.search(who, TAG, "rust", limit=40)}
    assert "the deploy worker moved to rust entirely" in contents
    assert any(content.endswith("from b") for content in contents)


def test_a_door_killed_after_writing_replays_its_own_writes_from_the_snapshot_of_its_start(
    doors: Callable[..., MemoryService], who: Principal, tmp_path: Path
) -> None:
    seeding = doors(folder=None)
    _seed(seeding, who)
    first = doors()
    assert first.warm() == 1
    assert first.write_built_snapshots()[0] == 1  # what the door does right after its start's build
    position = _stamp(tmp_path / "indexes")["position"]
    kept = first.save(who, TAG, "the rust queue worker drains the cache")
    first.forget(who, TAG, content=_text(4))
    first.store.close()  # killed: no snapshot written on the way out
    assert _stamp(tmp_path / "indexes")["position"] == position  # the stamp outlived the writes

    restarted = doors()
    got = _ranking(restarted, who)
    assert restarted.indexes.keyword_builds == 0
    assert got == _ranking(doors(folder=None), who)
    assert kept.id in {hit.memory.id for hit in restarted.search(who, TAG, "drains", limit=5)}


def test_a_log_pruned_past_the_snapshot_s_position_makes_the_door_build(
    doors: Callable[..., MemoryService], who: Principal, capsys: pytest.CaptureFixture[str]
) -> None:
    first = doors()
    _seed(first, who, 10)
    first.search(who, TAG, "warm")
    _close(first)
    other = doors(folder=None, change_log_keep_commits=2)
    for index in range(10, 18):
        other.save(who, TAG, _text(index))
    capsys.readouterr()

    restarted = doors()
    got = _ranking(restarted, who)
    assert restarted.indexes.keyword_builds == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "change log no longer reaches back" in lines[0]
    assert got == _ranking(doors(folder=None), who)
    assert len(restarted.search(who, TAG, "note", limit=40)) == 18


def test_a_snapshot_of_another_database_is_refused(
    doors: Callable[..., MemoryService],
    who: Principal,
    postgres: PostgresServer,
    database: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = doors()
    _seed(first, who)
    first.search(who, TAG, "warm")
    _close(first)
    # an exact copy: the same rows, ids and change counter, under another name
    address, _, query = database.partition("?")
    name = address.rsplit("/", 1)[1]
    copy_name = name + "_copy"
    postgres.execute(f'DROP DATABASE IF EXISTS "{copy_name}"')
    postgres.execute(f'CREATE DATABASE "{copy_name}" TEMPLATE "{name}"')
    capsys.readouterr()
    try:
        copy = doors(url=f"{address[: -len(name)]}{copy_name}?{query}")
        got = _ranking(copy, who)
        assert copy.indexes.keyword_builds == 1
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and "written for another database" in lines[0]
        assert got == _ranking(doors(folder=None), who)
        copy.store.close()
    finally:
        postgres.execute(f'DROP DATABASE IF EXISTS "{copy_name}" WITH (FORCE)')


@pytest.mark.parametrize(
    "damage",
    ["stamp not json", "stamp of another shape", "keyword file garbage", "keyword file of another snapshot"],
)
def test_a_damaged_or_foreign_snapshot_file_makes_the_door_build_with_one_line(
    doors: Callable[..., MemoryService],
    who: Principal,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: str,
) -> None:
    folder = tmp_path / "indexes"
    first = doors()
    _seed(first, who)
    first.search(who, TAG, "warm")
    _close(first)
    [stamp_path] = folder.glob("*.json")
    [keyword_path] = folder.glob("*.keyword.npz")
    (folder / "notes.txt").write_text("someone else's file")
    if damage == "stamp not json":
        stamp_path.write_bytes(b"\x00\xffnot json")
    elif damage == "stamp of another shape":
        stamp_path.write_text(json.dumps(["format", 1]))
    elif damage == "keyword file garbage":
        keyword_path.write_bytes(os.urandom(4096))
    else:  # a keyword file written for another stamp (two doors writing at once)
        stamp = json.loads(stamp_path.read_text())
        stamp_path.write_text(json.dumps({**stamp, "token": "0" * 32}))
    capsys.readouterr()

    restarted = doors()
    got = _ranking(restarted, who)
    assert restarted.indexes.keyword_builds == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "not used" in lines[0], lines
    assert got == _ranking(doors(folder=None), who)
    assert (folder / "notes.txt").read_text() == "someone else's file"


def test_the_default_folder_names_the_database_never_the_password(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "share")}
    url = "postgresql://ana:s3cret-pw@db.example:5433/memory?sslmode=require&password=other-secret"
    folder = index_folder(None, url, env)
    assert folder.parent == tmp_path / "share" / "bli-memory" / "indexes"
    assert folder.name.startswith("db.example-5433-memory-")
    assert "s3cret" not in str(folder) and "other-secret" not in str(folder)
    assert index_folder(None, url.replace("s3cret-pw", "rotated"), env) == folder  # the same database
    assert index_folder(None, url.replace("/memory", "/other"), env) != folder
    assert index_folder("/x/chosen", url, env) == Path("/x/chosen")
    assert index_folder(None, url, {**env, "BLI_MEMORY_INDEX_DIR": "/y/env"}) == Path("/y/env")
    sqlite = index_folder(None, str(tmp_path / "memory.db"), env)
    assert sqlite == tmp_path / "memory.db.indexes"


def _saves(door: DoorProcess, count: int) -> None:
    for index in range(count):
        status, _ = door.post("/api/memory/save", {"content": _text(index), "containerTag": TAG})
        assert status == 201


def _search(door: DoorProcess) -> list[list[str]]:
    answers = []
    for q in QUERIES:
        status, body = door.post("/api/memory/search", {"q": q, "containerTag": TAG, "limit": 20})
        assert status == 200
        answers.append([hit["id"] for hit in body["results"]])
    return answers


def test_a_postgres_door_keeps_snapshots_under_its_data_home_and_reads_them_after_a_kill(
    start_door: Callable[..., DoorProcess],
) -> None:
    env = {"BLI_MEMORY_SNAPSHOT_MIN_MEMORIES": "5"}
    door = start_door(store="postgresql", env=env)
    _saves(door, 12)
    before = _search(door)
    door.stop()  # the snapshot is written on the way out
    root = door.home / "share" / "bli-memory" / "indexes"
    [folder] = list(root.iterdir())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = sorted(folder.iterdir())
    assert sorted(path.name.split(".", 1)[1] for path in files) == ["json", "keyword.npz"]
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in files)

    door.lines.clear()
    door.start()  # from the snapshot: nothing built, so nothing written at start
    door.wait_for_log("bli-memory-door indexed 1 spaces", 30.0, at_start=True)
    assert _search(door) == before
    assert not any("index snapshots" in line or "not used" in line for line in door.lines)
    door.kill()

    for path in folder.glob("*.json"):
        path.unlink()  # no snapshot: the next start builds, and writes one at once
    door.lines.clear()
    door.start()
    door.wait_for_log("bli-memory-door wrote 1 index snapshots", 30.0, at_start=True)
    door.kill()  # killed: nothing written on the way out
    assert list(folder.glob("*.json"))
    door.lines.clear()
    door.start()
    door.wait_for_log("bli-memory-door indexed 1 spaces", 30.0, at_start=True)
    assert _search(door) == before
    assert not any("index snapshots" in line for line in door.lines)
    door.stop()


@pytest.mark.parametrize("store", ["postgresql", "sqlite"])
def test_index_dir_and_its_variable_choose_the_folder(
    start_door: Callable[..., DoorProcess], tmp_path: Path, store: str
) -> None:
    chosen = tmp_path / "chosen" / "indexes"
    door = start_door(
        "--embedder",
        "none",
        "--index-dir",
        str(chosen),
        store=store,
        env={"BLI_MEMORY_SNAPSHOT_MIN_MEMORIES": "5"},
    )
    _saves(door, 6)
    _search(door)  # the space's index is built (and written when the door stops)
    door.stop()
    assert list(chosen.glob("*.json")) and stat.S_IMODE(chosen.stat().st_mode) == 0o700
    assert not (door.home / "share" / "bli-memory" / "indexes").exists()
    assert not list(tmp_path.glob("*/*.indexes"))  # not next to a SQLite file either
    by_env = tmp_path / "by-env"
    other = start_door(
        store=store,
        folder="other",
        env={"BLI_MEMORY_SNAPSHOT_MIN_MEMORIES": "5", "BLI_MEMORY_INDEX_DIR": str(by_env)},
    )
    _saves(other, 6)
    _search(other)
    other.stop()
    assert list(by_env.glob("*.json"))


def test_serve_help_lists_the_index_folder_and_its_variable() -> None:
    import subprocess

    from tests.helpers import BIN

    done = subprocess.run(
        [str(BIN / "bli-memory-door"), "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "BLI_MEMORY_INDEX_DIR" in done.stdout and "--index-dir" in done.stdout


def test_a_write_removes_temporary_files_of_dead_writers_only(
    doors: Callable[..., MemoryService], who: Principal, tmp_path: Path
) -> None:
    folder = tmp_path / "indexes"
    folder.mkdir(mode=0o700)
    stem = space_file_stem((who.team_id, TAG), "")
    dead = folder / f"{stem}.keyword.npz.{2**22 + 1}.tmp"  # above any pid Linux gives
    alive = folder / f"{stem}.keyword.npz.{os.getppid()}.tmp"  # a writer still running
    foreign = folder / "backup.2024.tmp"
    for path in (dead, alive, foreign):
        path.write_bytes(b"half written")
    door = doors()
    _seed(door, who, 6)
    door.search(who, TAG, "warm")
    _close(door)
    assert not dead.exists() and alive.exists() and foreign.exists()
    assert list(folder.glob("*.json"))
    assert not list(folder.glob(f"*.{os.getpid()}.tmp"))  # its own were renamed into place
