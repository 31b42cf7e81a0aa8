"""Admin belongs to one device, not to its person: pairing never hands admin to a device that was not
paired with `--admin`, never promotes a person's other devices, and `tokens demote|promote` change it.
A version-3 database (admin per person) keeps every device's rights when it moves to version 4."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import uuid
from contextlib import closing
from pathlib import Path

from bli_memory.door.store.sqlite import SCHEMA_VERSION, SqliteStore
from bli_memory.door.store.sqlite.schema import MIGRATIONS
from tests.helpers import BIN, DoorProcess

DOOR = str(BIN / "bli-memory-door")


def _may_set_aliases(door: DoorProcess, token: str) -> bool:
    name = uuid.uuid4().hex[:8]
    status, body = door.post("/api/memory/aliases", {"alias": f"a_{name}", "canonical": f"c_{name}"}, token)
    assert status in (200, 403), body
    return status == 200


def _tokens(door: DoorProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DOOR, "tokens", *args, "--db", str(door.db)],
        capture_output=True,
        text=True,
        env=door.env(),
        timeout=60,
    )


def _devices(door: DoorProcess, person: str) -> list[dict[str, object]]:
    done = _tokens(door, "list", "--json")
    assert done.returncode == 0, done.stderr
    return [row for row in json.loads(done.stdout) if row["person"] == person]


def test_a_second_device_of_an_admin_is_not_admin_unless_paired_so(door: DoorProcess) -> None:
    carol = f"carol-{uuid.uuid4().hex[:8]}"
    first = door.pair(carol, admin=True)
    second = door.pair(carol)
    assert _may_set_aliases(door, first)
    assert not _may_set_aliases(door, second)
    assert [row["admin"] for row in _devices(door, carol)] == [True, False]


def test_pairing_an_admin_device_does_not_promote_the_persons_other_devices(door: DoorProcess) -> None:
    alice = f"alice-{uuid.uuid4().hex[:8]}"
    plain = door.pair(alice)
    admin = door.pair(alice, admin=True)
    assert not _may_set_aliases(door, plain)
    assert _may_set_aliases(door, admin)


def test_demote_and_promote_one_device(door: DoorProcess) -> None:
    dana = f"dana-{uuid.uuid4().hex[:8]}"
    token = door.pair(dana, admin=True)
    device = str(_devices(door, dana)[0]["id"])
    demoted = _tokens(door, "demote", device)
    assert demoted.returncode == 0 and demoted.stdout == f"{device} is no longer an admin device\n"
    assert not _may_set_aliases(door, token)  # at once: the door reads the flag on every request
    assert _devices(door, dana)[0]["admin"] is False
    promoted = _tokens(door, "promote", device)
    assert promoted.returncode == 0 and "is now an admin device" in promoted.stdout
    assert _may_set_aliases(door, token)
    unknown = _tokens(door, "demote", "dev_nosuchdevice")
    assert unknown.returncode == 1
    assert unknown.stderr == "bli-memory-door: no active device 'dev_nosuchdevice'\n"


def _version_3_file(path: Path) -> None:
    """A database as a version-3 door left it: admin on the person, a revoked device's job queued."""
    with closing(sqlite3.connect(path)) as db:
        for step in (1, 2, 3):
            for statement in MIGRATIONS[step]:
                db.execute(statement)
        db.executescript(
            """
            INSERT INTO teams (id, name, created_at) VALUES (1, 'local', 0);
            INSERT INTO people (id, team_id, name, admin, created_at) VALUES (1, 1, 'boss', 1, 0);
            INSERT INTO people (id, team_id, name, admin, created_at) VALUES (2, 1, 'dev', 0, 0);
            INSERT INTO devices (id, person_id, token_hash, created_at) VALUES ('dev_boss1', 1, 'h1', 0);
            INSERT INTO devices (id, person_id, token_hash, created_at) VALUES ('dev_boss2', 1, 'h2', 0);
            INSERT INTO devices (id, person_id, token_hash, created_at, revoked_at)
                VALUES ('dev_dev1', 2, 'h3', 0, 5);
            INSERT INTO memory_extract_jobs (id, team_id, person_id, device_id, container_tag, content,
                created_at) VALUES ('job_left', 1, 2, 'dev_dev1', 't', 'queued before the revoke', 1);
            PRAGMA user_version = 3;
            """
        )


def test_a_version_3_database_keeps_each_devices_rights_and_cancels_revoked_jobs(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _version_3_file(path)
    store = SqliteStore(path)
    try:
        assert store.schema_version() == SCHEMA_VERSION == 7
        admin = {str(row["id"]): bool(row["admin"]) for row in store.list_devices()}
        assert admin == {"dev_boss1": True, "dev_boss2": True, "dev_dev1": False}
        assert store.claim_job() is None  # the revoked device's job does not run
    finally:
        store.close()
    with closing(sqlite3.connect(path)) as db:
        status = db.execute("SELECT status, error FROM memory_extract_jobs WHERE id = 'job_left'").fetchone()
    assert status[0] == "cancelled" and "revoked" in status[1]
