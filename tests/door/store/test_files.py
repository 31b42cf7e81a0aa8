"""The door's files are private whatever the umask: the folder it creates is 0700, the database and
its -wal and -shm 0600; a folder it had to create is said on stderr; an existing file that other
users can read is named at start with the chmod that fixes it. Real doors, started with umask 022."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import urllib.request
from pathlib import Path

from tests.helpers import BIN, LISTENING

DOOR = str(BIN / "bli-memory-door")
PERMISSIVE_UMASK = 0o022


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}


def _serve(home: Path, db: Path) -> tuple[subprocess.Popen[str], str, list[str]]:
    process = subprocess.Popen(
        [DOOR, "serve", "--port", "0", "--embedder", "none", "--no-autopair", "--no-worker", "--db", str(db)],
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home),
        umask=PERMISSIVE_UMASK,
    )
    lines: list[str] = []
    assert process.stderr is not None
    for line in process.stderr:  # ends when the door exits: bounded by its start-up
        lines.append(line)
        if line.startswith(LISTENING):
            return process, line[len(LISTENING) :].strip(), lines
    process.wait(15)
    raise AssertionError("no listening line: " + "".join(lines))


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    assert process.wait(15) == 0


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _pair(home: Path, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DOOR, "pair", "--person", "ada", "--db", str(db)],
        capture_output=True,
        text=True,
        env=_env(home),
        umask=PERMISSIVE_UMASK,
        timeout=60,
    )


def test_a_new_database_is_private_with_a_permissive_umask(tmp_path: Path) -> None:
    db = tmp_path / "not-yet" / "data" / "memory.db"
    process, url, lines = _serve(tmp_path, db)
    try:
        assert f"bli-memory-door: created the folder {db.parent} (mode 0700) for the database\n" in lines
        paired = _pair(tmp_path, db)
        assert paired.returncode == 0, paired.stderr
        request = urllib.request.Request(
            url + "/api/memory/save",
            data=json.dumps({"content": "private by default", "containerTag": "t"}).encode(),
            headers={"Authorization": f"Bearer {paired.stdout.strip()}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201
        assert _mode(db.parent) == 0o700
        for name in ("memory.db", "memory.db-wal", "memory.db-shm", "memory.db.pid"):
            assert _mode(db.parent / name) == 0o600, name
        assert not any("other local users" in line for line in lines)
    finally:
        _stop(process)


def test_pair_under_a_missing_folder_says_it_made_it(tmp_path: Path) -> None:
    db = tmp_path / "typo" / "memory.db"
    paired = _pair(tmp_path, db)
    assert paired.returncode == 0
    assert f"created the folder {db.parent} (mode 0700)" in paired.stderr
    assert _mode(db.parent) == 0o700 and _mode(db) == 0o600
    again = _pair(tmp_path, db)
    assert "created the folder" not in again.stderr


def test_an_existing_database_readable_by_others_is_named_once_with_the_fix(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    process, _, _ = _serve(tmp_path, db)
    _stop(process)
    db.chmod(0o644)  # as a door before this one left it
    process, _, lines = _serve(tmp_path, db)
    _stop(process)
    warnings = [line for line in lines if "other local users" in line]
    assert warnings == [
        f"bli-memory-door: other local users may read {db} (644); run: chmod 600 {db} {db}-wal {db}-shm\n"
    ]
    db.chmod(0o600)
    process, _, lines = _serve(tmp_path, db)
    _stop(process)
    assert not any("other local users" in line for line in lines)
