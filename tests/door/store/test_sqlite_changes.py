"""The SQLite store's change log (schema v6): every write of memories or aliases is logged in its own
transaction under the counter value it took, in commit order; `changes_since` reads what changed
after a position, as it is now; the log stays bounded and a position older than what it keeps says
"everything"; a file of the previous schema version migrates and starts its log empty."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from bli_memory.door.model import hash_text, now_s
from bli_memory.door.store.base import ImportedVersion
from bli_memory.door.store.roles.changes import ChangeLogStore
from bli_memory.door.store.sqlite import SCHEMA_VERSION, SqliteStore
from bli_memory.door.store.sqlite.schema import MIGRATIONS
from tests.door.helpers import new_version, store_principal


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Callable[..., SqliteStore]]:
    """Stores over the test's file (each one a process of its own); all closed at teardown."""
    opened: list[SqliteStore] = []

    def open_one(**options: int) -> SqliteStore:
        store = SqliteStore(tmp_path / "memory.db", **options)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


def _log(path: Path) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as db:
        return list(
            db.execute(
                "SELECT counter, kind, container_tag, memory_id FROM bli_change_log ORDER BY counter, rowid"
            )
        )


def test_each_write_path_is_logged_in_its_transaction_under_the_counter_value_it_took(
    stores: Callable[..., SqliteStore], tmp_path: Path
) -> None:
    store = stores()
    assert isinstance(store, ChangeLogStore)
    ada = store_principal(store)
    store.changes_elsewhere(set())
    start = store.change_position()
    assert start == 0 and _log(tmp_path / "memory.db") == []  # a device is no change of memories
    first = store.insert_version(new_version(ada, "first"))
    with store.transaction():  # one transaction, one counter value, however many changes
        second = store.insert_version(new_version(ada, "second", tag="u"))
        assert store.retire(first, "forgotten")
    assert store.set_vector(second, hash_text("second"), "m", np.ones(3, dtype=np.float32))
    store.put_alias(ada.team_id, "alias", "t")
    imported = ImportedVersion(
        team_id=ada.team_id,
        id="mem_imported",
        container_tag="t",
        content="imported",
        content_hash=hash_text("imported"),
        kind="memory",
        status="current",
        version=1,
        root_id="mem_imported",
        previous_version_id=None,
        custom_id=None,
        metadata=None,
        person_id=ada.person_id,
        device_id=ada.device_id,
        created_at=now_s(),
        updated_at=now_s(),
        superseded_at=None,
    )
    assert store.insert_imported(imported)
    store.purge(ada.team_id, ["u"])
    store.purge(ada.team_id, None, dry_run=True)  # nothing deleted: nothing logged
    with pytest.raises(RuntimeError), store.transaction():
        store.insert_version(new_version(ada, "rolled back"))
        raise RuntimeError("undone")
    assert _log(tmp_path / "memory.db") == [
        (1, "memory", "t", first),
        (2, "memory", "u", second),
        (2, "memory", "t", first),
        (3, "memory", "u", second),
        (4, "aliases", None, None),
        (5, "memory", "t", "mem_imported"),
        (6, "space", "u", None),
    ]
    changes = store.changes_since(0, {(ada.team_id, "t"), (ada.team_id, "u")})
    assert not changes.everything and changes.aliases and changes.spaces == {(ada.team_id, "u")}
    assert {key: [row.content for row in rows] for key, rows in changes.current.items()} == {
        (ada.team_id, "t"): ["imported"]
    }
    assert changes.gone == {(ada.team_id, "t"): [first], (ada.team_id, "u"): [second]}  # purged
    assert store.changes_since(6, {(ada.team_id, "t")}) == type(changes)()  # nothing after it
    assert store.change_position() == 0  # reading the log moves no position
    store.changes_elsewhere(set())
    assert store.change_position() == 6


def test_another_process_s_writes_are_in_the_log_and_the_position_never_runs_ahead(
    stores: Callable[..., SqliteStore],
) -> None:
    door, cli = stores(), stores()
    ada = store_principal(door)
    assert door.changes_elsewhere(set()).seen is False
    cli.insert_version(new_version(ada, "imported by the command line"))
    changes = door.changes_elsewhere({(ada.team_id, "t")})
    assert changes.everything and changes.seen  # the door drops its indexes, as before
    assert door.change_position() == 1
    assert [
        row.content for row in door.changes_since(0, {(ada.team_id, "t")}).current[(ada.team_id, "t")]
    ] == ["imported by the command line"]


def test_the_log_keeps_the_newest_transactions_and_a_position_older_says_everything(
    stores: Callable[..., SqliteStore], tmp_path: Path
) -> None:
    store = stores(change_log_keep_commits=3)
    ada = store_principal(store)
    for index in range(8):
        store.insert_version(new_version(ada, f"note {index}"))
    counters = [row[0] for row in _log(tmp_path / "memory.db")]
    assert counters[-1] == 8 and len(counters) < 6  # bounded
    assert store.changes_since(0, {(ada.team_id, "t")}).everything
    assert store.changes_since(9, {(ada.team_id, "t")}).everything  # a position this file never had
    recent = store.changes_since(7, {(ada.team_id, "t")})
    assert not recent.everything and [row.content for row in recent.current[(ada.team_id, "t")]] == ["note 7"]


def test_more_changes_than_one_answer_reads_become_the_spaces_they_touch(
    stores: Callable[..., SqliteStore],
) -> None:
    store = stores(change_log_max_rows=3)
    ada = store_principal(store)
    for index in range(5):
        store.insert_version(new_version(ada, f"note {index}"))
    store.insert_version(new_version(ada, "elsewhere", tag="u"))
    changes = store.changes_since(0, {(ada.team_id, "t")})
    assert not changes.everything and not changes.current and not changes.gone
    assert changes.spaces == {(ada.team_id, "t"), (ada.team_id, "u")}


def test_a_file_from_before_the_change_log_migrates_and_starts_an_empty_log(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with closing(sqlite3.connect(path)) as db:
        for step in range(1, 6):
            for statement in MIGRATIONS[step]:
                db.execute(statement)
        db.execute("PRAGMA user_version = 5")
        db.execute("INSERT INTO teams (id, name, created_at) VALUES (1, 'local', 1.0)")
        db.execute(
            """INSERT INTO memories (id, team_id, container_tag, content, content_hash, root_id, created_at,
                   updated_at) VALUES ('mem_old', 1, 't', 'written before the log', 'h', 'mem_old', 1.0, 1.0)"""
        )
        db.commit()
    store = SqliteStore(path)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.index_identity().startswith("sqlite:") and len(store.index_identity()) > 20
        assert [row.id for row in store.index_rows(1, "t")] == ["mem_old"]
        assert store.changes_since(0, {(1, "t")}) == type(store.changes_since(0, set()))()
        assert store.retire("mem_old", "forgotten")
        assert store.changes_since(0, {(1, "t")}).gone == {(1, "t"): ["mem_old"]}
    finally:
        store.close()
    again = SqliteStore(path)  # the name stays with the file
    try:
        assert again.index_identity() == store.index_identity()
    finally:
        again.close()
