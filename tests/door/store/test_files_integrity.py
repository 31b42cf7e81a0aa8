"""A damaged database is refused at start with one line and exit 1, and nothing writes to it: no
autopair, no migration, no WAL checkpoint. A real file, damaged by writing garbage over one page."""

from __future__ import annotations

import io
import os
import random
import sqlite3
import subprocess
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from bli_memory.door.errors import StoreDamaged
from bli_memory.door.jobs import ExtractionWorker
from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore
from bli_memory.door.store.sqlite.files import DamagedDatabase, EarlyCheck, check_integrity
from tests.helpers import BIN, DoorProcess

DOOR = str(BIN / "bli-memory-door")


def _real_database(path: Path, memories: int = 2000) -> None:
    store = MemoryService(SqliteStore(path))
    _, token = store.store.create_device(person="ada", admin=True)
    principal = store.authenticate(token)
    assert principal is not None
    rng = random.Random(7)
    texts = [
        f"memory {i}: " + " ".join(rng.choice("alpha beta gamma delta".split()) for _ in range(150))
        for i in range(memories)
    ]
    store.save_many(principal, "repo_damage", texts)
    store.close()


def _damage(path: Path) -> None:
    """Garbage over one page in the middle of the file, as a bad disk block would leave it."""
    with closing(sqlite3.connect(path)) as db:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    with open(path, "r+b") as file:
        file.seek((pages // 2) * page_size)
        file.write(random.Random(1).randbytes(page_size))


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share"), "USER": "dana"}
    return subprocess.run([DOOR, *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "memory.db"
    _real_database(path)
    _damage(path)
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:  # the damage is real
        try:
            assert db.execute("PRAGMA quick_check").fetchone()[0] != "ok"
        except sqlite3.DatabaseError as exc:
            assert "malformed" in str(exc)
    return path


def test_a_damaged_database_is_refused_with_one_line_and_left_untouched(
    tmp_path: Path, damaged: Path
) -> None:
    before = damaged.read_bytes()
    done = _run(tmp_path, "serve", "--port", "0", "--db", str(damaged), "--embedder", "none")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"bli-memory-door: {damaged} is damaged (")
    assert "will not serve it nor write to it" in done.stderr and "docs/door-operations.md" in done.stderr
    assert "listening" not in done.stderr
    assert damaged.read_bytes() == before
    wal = Path(f"{damaged}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # nothing was logged to be checkpointed later
    assert not (tmp_path / ".config").exists()  # no autopair: no device, no session file


def test_pair_and_tokens_refuse_a_damaged_database_too(tmp_path: Path, damaged: Path) -> None:
    before = damaged.read_bytes()
    paired = _run(tmp_path, "pair", "--person", "mallory", "--admin", "--db", str(damaged))
    assert paired.returncode == 1 and paired.stdout == "" and "is damaged" in paired.stderr
    listed = _run(tmp_path, "tokens", "list", "--db", str(damaged))
    assert listed.returncode == 1 and "is damaged" in listed.stderr
    assert damaged.read_bytes() == before


def test_the_check_finds_the_damage_in_process_and_stops_at_its_budget(tmp_path: Path) -> None:
    sound = tmp_path / "sound.db"
    _real_database(sound, memories=200)
    assert check_integrity(sound) is True
    assert check_integrity(sound, budget_s=0.0) is False  # a file too big for the budget: partly checked
    broken = tmp_path / "broken.db"
    _real_database(broken)
    _damage(broken)
    with pytest.raises(DamagedDatabase, match="is damaged"):
        SqliteStore(broken)


def test_damage_found_while_serving_stops_the_worker_with_one_line(tmp_path: Path) -> None:
    """The start-up check passed, then a page of the jobs table went bad: the worker says so once
    and stops, instead of retrying every two seconds for ever."""
    store = SqliteStore(tmp_path / "memory.db")
    log = io.StringIO()
    worker = ExtractionWorker(MemoryService(store), log=log)
    worker.start()
    _, token = store.create_device(person="ada")
    principal = store.authenticate(token)
    assert principal is not None
    for n in range(50):
        store.enqueue_job(
            principal, "repo_damage", f"Fact {n}: the cache of service-{n} expires daily. " * 20, None
        )
    with store._lock:  # the file as the disk now holds it: no WAL, no cached pages
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = store._db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memory_extract_jobs'")
        page = root.fetchone()[0]
        page_size = store._db.execute("PRAGMA page_size").fetchone()[0]
        with open(tmp_path / "memory.db", "r+b") as file:
            file.seek((page - 1) * page_size)
            file.write(random.Random(3).randbytes(page_size))
        store._db.execute("PRAGMA shrink_memory")
    worker.wake()
    worker._thread.join(10)
    assert not worker._thread.is_alive()
    lines = log.getvalue().splitlines()
    assert sum("is damaged" in line for line in lines) == 1
    assert "background work stopped" in lines[-1] and not any("retrying" in line for line in lines)
    store.close()


def test_a_damaged_page_a_read_meets_leaves_the_store_as_store_damaged_said_once(tmp_path: Path) -> None:
    """The store maps SQLite's "malformed" at its own boundary: the read that meets it raises the
    door's StoreDamaged (503 store_damaged) carrying the one stderr line, later ones carry none, and
    from then on every write is refused as after the background check found it."""
    store = SqliteStore(tmp_path / "memory.db")
    _, token = store.create_device(person="ada")
    principal = store.authenticate(token)
    assert principal is not None
    job_id = store.enqueue_job(principal, "repo_damage", "Fact: the cache expires daily. " * 50, None)
    with store._lock:  # the file as the disk now holds it: no WAL, no cached pages
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = store._db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memory_extract_jobs'")
        page = root.fetchone()[0]
        page_size = store._db.execute("PRAGMA page_size").fetchone()[0]
        with open(tmp_path / "memory.db", "r+b") as file:
            file.seek((page - 1) * page_size)
            file.write(random.Random(3).randbytes(page_size))
        store._db.execute("PRAGMA shrink_memory")
    with pytest.raises(StoreDamaged) as first:
        store.get_job(principal.team_id, job_id)
    assert first.value.status == 503 and first.value.code == "store_damaged"
    assert first.value.log_line is not None and "found by a request" in first.value.log_line
    assert str(tmp_path / "memory.db") in first.value.log_line and isinstance(
        first.value.__cause__, sqlite3.Error
    )
    with pytest.raises(StoreDamaged) as again:
        store.get_job(principal.team_id, job_id)
    assert again.value.log_line is None and store.integrity is not None and store.integrity.damaged
    with pytest.raises(StoreDamaged, match="nothing was written"):
        store.create_device(person="mallory")
    assert store.authenticate(token) is not None  # reads of sound pages go on
    store.close()


# ------------------------------------------------------------------ the rest, checked in the background

BUDGET_ENV = "BLI_MEMORY_INTEGRITY_CHECK_BUDGET_S"
#: every wait on the door's background check is bounded by this.
CHECK_WAIT_S = 30.0


def _damage_table(path: Path, table: str) -> None:
    """Garbage over the root page of `table`: a part of the file searches and saves never read."""
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as file:
        file.seek((page - 1) * page_size)
        file.write(random.Random(5).randbytes(page_size))


def _health_when(door: DoorProcess, state: str) -> dict[str, object]:
    """/healthz once its integrityCheck says `state` (bounded wait)."""
    deadline = time.monotonic() + CHECK_WAIT_S
    health: object = None
    while time.monotonic() < deadline:
        _, health = door.get("/healthz")
        assert isinstance(health, dict), health
        if health.get("integrityCheck") == state:
            return health
        assert health.get("integrityCheck") in ("running", "whole", "damaged"), health
        time.sleep(0.05)
    raise AssertionError(f"/healthz never said integrityCheck {state!r}: {health}")


def _file_state(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def test_a_file_too_big_for_the_budget_is_served_at_once_and_then_checked_whole(
    start_door: Callable[..., DoorProcess], tmp_path: Path
) -> None:
    _real_database(tmp_path / "own" / "memory.db")
    door = start_door("--embedder", "none", env={BUDGET_ENV: "0"})
    assert any("checked in the background" in line for line in door.lines), door.lines
    health = _health_when(door, "whole")
    assert health["ok"] is True
    status, saved = door.post("/api/memory/save", {"containerTag": "repo_damage", "content": "sound file"})
    assert status == 201 and saved["status"] == "created", saved
    assert not any("damaged" in line for line in door.lines), door.lines


def test_a_small_file_is_checked_whole_before_the_door_opens(
    start_door: Callable[..., DoorProcess], tmp_path: Path
) -> None:
    _real_database(tmp_path / "own" / "memory.db")
    door = start_door("--embedder", "none")
    _, health = door.get("/healthz")
    assert health["integrityCheck"] == "whole"
    assert not any("background" in line for line in door.lines), door.lines


def test_damage_found_in_the_background_refuses_every_write_and_leaves_the_file_alone(
    start_door: Callable[..., DoorProcess], tmp_path: Path
) -> None:
    """The budget (0) checks nothing before the door opens; the background check then finds the
    damaged page: one line, writes answer 503 store_damaged, reads answer, /healthz says so, and
    the file is never written again, not even by the door's stop (no WAL checkpoint into it)."""
    path = tmp_path / "own" / "memory.db"
    _real_database(path)
    _damage_table(path, "hook_stats")
    door = start_door("--embedder", "none", env={BUDGET_ENV: "0"})
    health = _health_when(door, "damaged")
    assert health["ok"] is False and health["reason"] == "store_damaged"
    assert str(path) in str(health["message"])
    status, _ = door.get("/healthz")
    assert status == 503
    found = [line for line in door.lines if "found by the background check" in line]
    assert len(found) == 1 and found[0].startswith(f"bli-memory-door: {path} is damaged ("), door.lines
    before = _file_state(path)

    status, refused = door.post("/api/memory/save", {"containerTag": "repo_damage", "content": "one more"})
    assert status == 503 and refused["error"] == "store_damaged", refused
    assert "nothing was written" in refused["message"]
    status, found_rows = door.post("/api/memory/search", {"containerTag": "repo_damage", "q": "alpha beta"})
    assert status == 200 and found_rows["results"], found_rows
    first = found_rows["results"][0]["id"]
    status, refused = door.post("/api/memory/forget", {"containerTag": "repo_damage", "id": first})
    assert status == 503 and refused["error"] == "store_damaged", refused
    status, kept = door.get(f"/api/memory/{first}/history")
    assert status == 200 and [version["status"] for version in kept["versions"]] == ["current"], kept
    assert _file_state(path) == before

    assert door.stop() == 0
    assert _file_state(path) == before  # the stop did not checkpoint the WAL into the damaged file
    assert sum("found by the background check" in line for line in door.lines) == 1
    assert not any("Traceback" in line for line in door.lines), door.lines


def test_a_budget_that_is_not_a_number_of_seconds_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [DOOR, "serve", "--port", "0", "--db", str(tmp_path / "memory.db"), "--embedder", "none"],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path), BUDGET_ENV: "soon"},
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"{BUDGET_ENV} must be a number of seconds" in done.stderr
    assert not (tmp_path / "memory.db").exists()


def test_the_store_checks_the_rest_in_the_background_and_then_refuses_writes(tmp_path: Path) -> None:
    """In process: a budget of 0 leaves the check to the background thread; on a sound file it ends
    `whole` with one line, on a damaged one `damaged`, and every write then raises StoreDamaged (which
    the store calls damage, so the extraction worker stops on it) without touching the file."""
    sound = tmp_path / "sound.db"
    _real_database(sound, memories=200)
    store = SqliteStore(sound, integrity_budget_s=0)
    assert store.integrity.state == "partial"
    said: list[str] = []
    assert store.check_rest_in_background(said.append) is True
    assert store.integrity.wait(CHECK_WAIT_S) and store.integrity.state == "whole"
    assert len(said) == 1 and said[0].startswith(f"{sound} checked whole for damage in ")
    assert store.check_rest_in_background(said.append) is False  # nothing left to check
    store.create_device(person="grace")
    store.close()

    broken = tmp_path / "broken.db"
    _real_database(broken)
    _damage_table(broken, "hook_stats")
    store = SqliteStore(broken, integrity_budget_s=0)
    said.clear()
    store.check_rest_in_background(said.append)
    assert store.integrity.wait(CHECK_WAIT_S) and store.integrity.state == "damaged"
    assert len(said) == 1 and "found by the background check" in said[0]
    before = _file_state(broken)
    with pytest.raises(StoreDamaged, match="nothing was written") as refused:
        store.create_device(person="mallory")
    assert store.is_damage(refused.value)
    assert store.authenticate("no such token") is None  # reads go on
    store.close()
    assert _file_state(broken) == before


def test_damage_a_request_meets_while_serving_refuses_every_later_write(
    start_door: Callable[..., DoorProcess], tmp_path: Path
) -> None:
    """The start-up check passed; then the disk spoiled the index of memory ids under the running
    door. The read that meets it answers 503 store_damaged (not a bare 500), says so once on
    stderr, and from then on the door takes no write, as when its background check finds damage."""
    path = tmp_path / "own" / "memory.db"
    _real_database(path)
    door = start_door("--embedder", "none")
    status, found_rows = door.post("/api/memory/search", {"containerTag": "repo_damage", "q": "gamma delta"})
    assert status == 200 and found_rows["results"], found_rows
    first = found_rows["results"][0]["id"]
    _damage_table(path, "sqlite_autoindex_memories_1")

    status, answer = door.get(f"/api/memory/{first}/history")
    assert status == 503 and answer["error"] == "store_damaged", answer
    status, refused = door.post(
        "/api/memory/save", {"containerTag": "repo_damage", "content": "after the damage"}
    )
    assert status == 503 and refused["error"] == "store_damaged", refused
    status, health = door.get("/healthz")
    assert status == 503 and health["integrityCheck"] == "damaged" and health["reason"] == "store_damaged"
    assert sum("found by a request" in line for line in door.lines) == 1, door.lines
    assert not any("internal error" in line for line in door.lines), "\n".join(door.lines)


def test_the_check_begun_early_gives_the_store_its_answer(tmp_path: Path) -> None:
    """`serve` begins the start-up check on a thread before it loads its libraries; the store waits
    for that answer before it opens the file for writing, and a damaged file is refused the same."""
    sound = tmp_path / "sound.db"
    _real_database(sound, memories=200)
    early = EarlyCheck(sound, 0.0)
    store = SqliteStore(sound, early_check=early)
    assert early.covers and store.checked_whole is False
    store.close()
    early = EarlyCheck(sound)
    store = SqliteStore(sound, early_check=early)
    assert store.checked_whole is True and store.integrity.state == "whole"
    store.close()
    broken = tmp_path / "broken.db"
    _real_database(broken)
    _damage(broken)
    before = broken.read_bytes()
    early = EarlyCheck(broken)
    with pytest.raises(DamagedDatabase, match="is damaged"):
        SqliteStore(broken, early_check=early)
    assert broken.read_bytes() == before
    assert EarlyCheck(tmp_path / "new.db").covers is False  # nothing to check: the store makes it


def test_a_waiting_background_check_ends_with_the_store_and_found_damage_stands(tmp_path: Path) -> None:
    """A door's background check waits for the indexes (`go()`): closed before then it never runs;
    and damage a request met meanwhile is not undone by the check finding the rest sound."""
    sound = tmp_path / "sound.db"
    _real_database(sound, memories=200)
    store = SqliteStore(sound, integrity_budget_s=0)
    said: list[str] = []
    store.check_rest_in_background(said.append, wait_s=CHECK_WAIT_S)
    started = time.monotonic()
    store.close()
    assert time.monotonic() - started < CHECK_WAIT_S / 2 and said == []

    store = SqliteStore(sound, integrity_budget_s=0)
    store.check_rest_in_background(said.append, wait_s=CHECK_WAIT_S)
    assert store.found_damage(sqlite3.DatabaseError("database disk image is malformed")) is True
    assert store.found_damage(sqlite3.DatabaseError("database disk image is malformed")) is False
    store.integrity.go()
    assert store.integrity.wait(CHECK_WAIT_S) and store.integrity.state == "damaged"
    with pytest.raises(StoreDamaged):
        store.create_device(person="mallory")
    store.close()
