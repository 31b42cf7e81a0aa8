"""A damaged database is refused at start with one line and exit 1, and nothing writes to it: no
autopair, no migration, no WAL checkpoint. A real file, damaged by writing garbage over one page."""

from __future__ import annotations

import io
import os
import random
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from bli_memory.door.jobs import ExtractionWorker
from bli_memory.door.memories import MemoryService
from bli_memory.door.store.sqlite import SqliteStore
from bli_memory.door.store.sqlite.files import DamagedDatabase, check_integrity
from tests.helpers import BIN

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
    worker = ExtractionWorker(MemoryService(store), env={}, log=log)
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
