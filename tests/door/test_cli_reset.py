"""`bli-memory-door reset`: an operator's removal of a team's or a space's memories, refused while a door
serves the file, behind a typed name, after a 0600 backup. Real doors and the real CLI."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.helpers import BIN, DoorProcess

DOOR = str(BIN / "bli-memory-door")


def door_cli(door: DoorProcess, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DOOR, *args, "--db", str(door.db)],
        input=stdin,
        capture_output=True,
        text=True,
        env=door.env(),
        timeout=60,
    )


def save(door: DoorProcess, tag: str, content: str, token: str | None = None, **extra: object) -> None:
    status, body = door.post("/api/memory/save", {"content": content, "containerTag": tag, **extra}, token)
    assert status in (201, 202), body
    if status == 202:
        door.wait_job(body["jobId"])


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as connection:
        return connection.execute(sql).fetchall()


def filled_door(start_door: Callable[..., DoorProcess]) -> tuple[DoorProcess, str]:
    door = start_door()
    outsider = door.pair("eve", team="other")
    save(door, "space-a", "Space A uses tabs.")
    save(door, "space-a", "We decided to deploy space A on Mondays because traffic is low.", extract=True)
    status, saved = door.post("/api/memory/save", {"content": "old text", "containerTag": "space-a"})
    assert status == 201
    status, _ = door.post("/api/memory/update", {"id": saved["id"], "content": "new text"})
    assert status == 200
    save(door, "space-b", "Space B uses spaces.")
    save(door, "space-a", "The other team's space A.", outsider)
    return door, outsider


def test_reset_is_refused_while_a_door_serves_the_file(start_door: Callable[..., DoorProcess]) -> None:
    door, _ = filled_door(start_door)
    done = door_cli(door, "reset", "--team", "local", "--confirm", "local")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done
    assert "reset refused: a door (pid" in done.stderr and "stop it first" in done.stderr
    assert rows(door.db, "SELECT count(*) FROM memories WHERE team_id = 1")[0][0] > 0
    assert not list(door.db.parent.glob("*.bak"))


def test_a_wrong_name_removes_nothing_and_writes_no_backup(start_door: Callable[..., DoorProcess]) -> None:
    door, _ = filled_door(start_door)
    door.stop()
    before = rows(door.db, "SELECT count(*) FROM memories")
    typed = door_cli(door, "reset", "--team", "local", "--space", "space-a", stdin="space-b\n")
    assert typed.returncode == 1 and "reset refused" in typed.stderr
    assert "Type the space tag (space-a) to confirm:" in typed.stderr
    assert (
        "This removes for good 4 current memories (and 1 older versions and tombstones) and 1 extraction jobs"
        in typed.stderr
    )
    nothing_typed = door_cli(door, "reset", "--team", "local")
    flagged = door_cli(door, "reset", "--team", "local", "--confirm", "Local")
    assert nothing_typed.returncode == 1 and flagged.returncode == 1
    assert rows(door.db, "SELECT count(*) FROM memories") == before
    assert not list(door.db.parent.glob("*.bak"))
    unknown = door_cli(door, "reset", "--team", "nobody", "--confirm", "nobody")
    assert unknown.returncode == 1 and "no team 'nobody'" in unknown.stderr
    missing = door_cli(door, "reset", "--space", "space-a")
    assert missing.returncode == 2 and "--team" in missing.stderr


def test_a_typed_space_reset_backs_up_then_removes_that_space_only(
    start_door: Callable[..., DoorProcess],
) -> None:
    door, outsider = filled_door(start_door)
    door.stop()
    done = door_cli(door, "reset", "--team", "local", "--space", "space-a", stdin="space-a\n")
    assert done.returncode == 0, done.stderr
    match = re.search(r"backup written to (\S+) \(mode 0600\)", done.stdout)
    assert match, done.stdout
    backup = Path(match.group(1))
    assert backup.parent == door.db.parent and stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    assert (
        "removed 4 current memories (and 1 older versions and tombstones) and 1 extraction jobs"
        in done.stdout
    )
    # the backup holds what was removed; the database no longer does
    local_a = "SELECT count(*) FROM memories WHERE team_id = 1 AND container_tag = 'space-a'"
    assert rows(backup, local_a)[0][0] == 5 and rows(door.db, local_a)[0][0] == 0
    assert rows(
        door.db, "SELECT count(*) FROM memory_extract_jobs WHERE container_tag = 'space-a' AND team_id = 1"
    ) == [(0,)]
    door.start()
    status, listed = door.post("/api/memory/list", {"containerTag": "space-b"})
    assert status == 200 and [row["content"] for row in listed["memories"]] == ["Space B uses spaces."]
    status, listed = door.post("/api/memory/list", {"containerTag": "space-a"})
    assert status == 200 and listed["memories"] == []
    status, theirs = door.post("/api/memory/list", {"containerTag": "space-a"}, outsider)
    assert [row["content"] for row in theirs["memories"]] == ["The other team's space A."]


def test_a_team_reset_with_confirm_keeps_devices_and_other_teams(
    start_door: Callable[..., DoorProcess],
) -> None:
    door, outsider = filled_door(start_door)
    door.stop()
    done = door_cli(door, "reset", "--team", "local", "--confirm", "local")
    assert done.returncode == 0, done.stderr
    assert rows(door.db, "SELECT count(*) FROM memories WHERE team_id = 1") == [(0,)]
    again = door_cli(door, "reset", "--team", "local", "--confirm", "local")
    assert again.returncode == 0 and "nothing to reset" in again.stdout
    assert len(list(door.db.parent.glob("*.bak"))) == 1
    door.start()
    status, body = door.post("/api/memory/search", {"q": "space", "containerTag": "space-b"})
    assert status == 200 and body["results"] == []  # the token still works; the memories are gone
    status, theirs = door.post("/api/memory/list", {"containerTag": "space-a"}, outsider)
    assert status == 200 and len(theirs["memories"]) == 1


def test_a_postgresql_database_is_refused_in_one_line_with_nothing_removed(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "none", store="postgresql")
    save(door, "space-a", "Space A uses tabs.")
    secret_url = str(door.db).replace("postgres:@", "postgres:s3cret@", 1)  # a password is never shown
    assert "s3cret" in secret_url
    for db in (str(door.db), secret_url):
        done = subprocess.run(
            [DOOR, "reset", "--team", "local", "--confirm", "local", "--db", db],
            capture_output=True,
            text=True,
            env=door.env(),
            timeout=60,
        )
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done
        assert "reset refused: it works on a SQLite file only" in done.stderr
        assert "nothing was removed" in done.stderr and "s3cret" not in done.stderr
    status, listed = door.post("/api/memory/list", {"containerTag": "space-a"})
    assert status == 200 and [row["content"] for row in listed["memories"]] == ["Space A uses tabs."]


def test_the_api_has_no_route_that_resets(door: DoorProcess) -> None:
    status, spec = door.get("/openapi.json", token="")
    assert status == 200
    assert not [path for path in spec["paths"] if any(word in path for word in ("reset", "purge", "wipe"))]
    assert all(set(methods) <= {"get", "post"} for methods in spec["paths"].values())
