"""How doors sharing one PostgreSQL database learn of each other's writes: the change log is written
with the counter in commit order and read past a door's position, a door applies another's saves,
updates and forgets to its keyword indexes in place (never rebuilding them), ranks exactly as a
freshly started door does, and rebuilds only what it cannot update: the spaces of a change set too
big to read, or everything when the log was pruned past its position."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from bli_memory.door.memories import MemoryService
from bli_memory.door.model import Principal
from bli_memory.door.store.postgres import SCHEMA_VERSION, PostgresStore, schema
from tests.door.helpers import new_version
from tests.door.store.helpers import WordsEmbedder

WORDS = "cache deploy database index python rust queue worker token search vector memory".split()


@pytest.fixture
def services(database: str) -> Iterator[Callable[..., MemoryService]]:
    """Memory services over the test's database (each one a door); all closed at teardown."""
    opened: list[MemoryService] = []

    def open_one(embedder: object = None, **options: int) -> MemoryService:
        service = MemoryService(PostgresStore(database, **options), embedder)  # type: ignore[arg-type]
        opened.append(service)
        return service

    yield open_one
    for service in opened:
        service.close()


def _device(store: PostgresStore) -> str:
    _, token = store.create_device(person="ada")
    return token


def _as(store: PostgresStore, token: str) -> Principal:
    principal = store.authenticate(token)
    assert principal is not None
    return principal


def _text(index: int) -> str:
    return " ".join(WORDS[(index * step) % len(WORDS)] for step in (1, 3, 7)) + f" note {index}"


# ---------------------------------------------------------------------------- the log


def test_each_write_is_logged_under_the_counter_value_it_took_and_own_commits_are_left_out(
    stores: Callable[..., PostgresStore], database: str
) -> None:
    writer, reader = stores(), stores()
    ada = _as(writer, _device(writer))
    reader.changes_elsewhere(set())  # the baseline
    first = writer.insert_version(new_version(ada, "first"))
    second = writer.insert_version(new_version(ada, "second", tag="u"))
    assert writer.retire(first, "forgotten")
    writer.put_alias(ada.team_id, "alias", "t")
    with psycopg.connect(database) as conn:
        logged = conn.execute(
            "SELECT counter, kind, container_tag, memory_id FROM bli_change_log ORDER BY counter"
        ).fetchall()
        [(counter,)] = conn.execute("SELECT counter FROM bli_changes").fetchall()
    numbers = [row[0] for row in logged]
    assert numbers == sorted(numbers) and len(set(numbers)) == 4 and numbers[-1] == counter
    assert [row[1:] for row in logged] == [
        ("memory", "t", first),
        ("memory", "u", second),
        ("memory", "t", first),
        ("aliases", None, None),
    ]
    assert writer.changes_elsewhere(set()).seen is False  # its own commits only
    changes = reader.changes_elsewhere({(ada.team_id, "t"), (ada.team_id, "u")})
    assert changes.seen and not changes.everything and changes.aliases
    assert {key: [row.content for row in rows] for key, rows in changes.current.items()} == {
        (ada.team_id, "u"): ["second"]
    }
    assert changes.gone == {(ada.team_id, "t"): [first]}
    assert reader.changes_elsewhere({(ada.team_id, "t")}).seen is False  # the position moved


def test_a_reader_polling_while_doors_write_at_once_misses_no_commit(
    stores: Callable[..., PostgresStore],
) -> None:
    """The counter's row lock is held from the bump to the commit: whatever counter value a reader
    sees, every transaction up to it has committed its log rows, so reading past the position in
    turns, while writers race, adds up to every write."""
    writers = [stores(), stores()]
    reader = stores()
    token = _device(writers[0])
    ada = _as(writers[0], token)
    space = (ada.team_id, "t")
    reader.changes_elsewhere({space})
    written: list[str] = []
    lock = threading.Lock()

    def write(number: int) -> None:
        store = writers[number % 2]
        for index in range(25):
            memory_id = store.insert_version(new_version(ada, f"writer {number} note {index}"))
            with lock:
                written.append(memory_id)

    threads = [threading.Thread(target=write, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    seen: set[str] = set()
    while any(thread.is_alive() for thread in threads):
        seen.update(row.id for row in reader.changes_elsewhere({space}).current.get(space, ()))
        time.sleep(0.005)
    for thread in threads:
        thread.join(30)
    seen.update(row.id for row in reader.changes_elsewhere({space}).current.get(space, ()))
    assert len(written) == 100 and seen == set(written)


def test_more_changes_than_one_answer_reads_become_the_spaces_they_touch(
    stores: Callable[..., PostgresStore],
) -> None:
    writer, reader = stores(), stores(change_log_max_rows=3)
    ada = _as(writer, _device(writer))
    reader.changes_elsewhere(set())
    for index in range(5):
        writer.insert_version(new_version(ada, f"note {index}"))
    writer.insert_version(new_version(ada, "elsewhere", tag="u"))
    changes = reader.changes_elsewhere({(ada.team_id, "t")})
    assert not changes.everything and not changes.current and not changes.gone
    assert changes.spaces == {(ada.team_id, "t"), (ada.team_id, "u")}


def test_a_log_pruned_past_a_door_s_position_says_everything(stores: Callable[..., PostgresStore]) -> None:
    writer, reader = stores(change_log_keep_commits=3), stores()
    ada = _as(writer, _device(writer))
    reader.changes_elsewhere(set())
    for index in range(8):
        writer.insert_version(new_version(ada, f"note {index}"))
    changes = reader.changes_elsewhere({(ada.team_id, "t")})
    assert changes.everything and changes.seen
    with writer._connection() as conn:
        row = conn.execute("SELECT min(counter) AS low, max(counter) AS high FROM bli_change_log").fetchone()
    assert row is not None and row["high"] - row["low"] < 6  # the log stays bounded
    writer.insert_version(new_version(ada, "after"))
    later = reader.changes_elsewhere({(ada.team_id, "t")})
    assert not later.everything and [row.content for row in later.current[(ada.team_id, "t")]] == ["after"]


# ---------------------------------------------------------------------------- the migration


def test_a_database_of_the_previous_version_migrates_and_an_older_door_s_write_is_noticed(
    database: str, monkeypatch: pytest.MonkeyPatch, stores: Callable[..., PostgresStore]
) -> None:
    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION - 1)
    with psycopg.connect(database, autocommit=True) as conn:
        schema.migrate(conn)
        conn.execute("INSERT INTO teams (name, created_at) VALUES ('local', 0)")
        conn.execute(
            """INSERT INTO memories (id, team_id, container_tag, content, content_hash, root_id, created_at,
                   updated_at) VALUES ('mem_old', 1, 't', 'written before', 'h', 'mem_old', 0, 0)"""
        )
        conn.execute("UPDATE bli_changes SET counter = 41")
        assert conn.execute("SELECT max(version) FROM bli_schema").fetchone() == (SCHEMA_VERSION - 1,)
    monkeypatch.undo()
    store = stores()
    assert store.schema_version() == SCHEMA_VERSION
    with store._connection() as conn:
        assert conn.execute("SELECT counter, pruned_through FROM bli_changes").fetchone() == {
            "counter": 41,
            "pruned_through": 41,
        }
    assert [row.content for row in store.index_rows(1, "t")] == ["written before"]
    store.changes_elsewhere({(1, "t")})
    with psycopg.connect(database, autocommit=True) as conn:  # a door of the previous version writes
        conn.execute("UPDATE bli_changes SET counter = counter + 1")
    assert store.changes_elsewhere({(1, "t")}).everything


# ---------------------------------------------------------------------------- doors


def test_a_door_applies_another_s_save_update_and_forget_without_rebuilding(
    services: Callable[..., MemoryService],
) -> None:
    first, second = services(), services()
    token = _device(first.store)  # type: ignore[arg-type]
    ada, ada_there = _as(first.store, token), _as(second.store, token)  # type: ignore[arg-type]
    first.save(ada, "t", "the cache lives in bucket alpha")
    first.save(ada, "u", "another space entirely")
    assert [hit.memory.content for hit in second.search(ada_there, "t", "bucket")] == [
        "the cache lives in bucket alpha"
    ]
    assert second.search(ada_there, "u", "space")
    index = second.indexes._keyword.peek((ada.team_id, "t"))
    assert second.indexes.keyword_builds == 2

    saved = first.save(ada, "t", "the queue drains into bucket beta")
    assert {hit.memory.content for hit in second.search(ada_there, "t", "bucket")} == {
        "the cache lives in bucket alpha",
        "the queue drains into bucket beta",
    }
    first.update(ada, saved.id, "the queue drains into bucket gamma")
    assert [hit.memory.content for hit in second.search(ada_there, "t", "drains")] == [
        "the queue drains into bucket gamma"
    ]
    first.forget(ada, "t", content="the cache lives in bucket alpha")
    assert [hit.memory.content for hit in second.search(ada_there, "t", "bucket")] == [
        "the queue drains into bucket gamma"
    ]
    assert second.indexes.keyword_builds == 2  # nothing was rebuilt
    assert second.indexes._keyword.peek((ada.team_id, "t")) is index


def test_a_door_updated_in_place_ranks_exactly_as_a_fresh_door(
    services: Callable[..., MemoryService],
) -> None:
    """Saves, updates and forgets on both doors, each searching between them; then a third door
    starts and builds its indexes from the store: the same hits, scores and channels on all."""
    first, second = services(WordsEmbedder()), services(WordsEmbedder())
    token = _device(first.store)  # type: ignore[arg-type]
    doors = [(first, _as(first.store, token)), (second, _as(second.store, token))]  # type: ignore[arg-type]
    queries = ("deploy the database", "rust worker queue", "vector search memory")
    saved: list[str] = []
    for index in range(90):
        service, who = doors[index % 2]
        saved.append(service.save(who, "space", _text(index), created_at=1_700_000_000.0 + index).id)
        if index % 7 == 3:
            saved[index - 2] = service.update(who, saved[index - 2], _text(index) + " revised").id
        if index % 11 == 5:
            service.forget(who, "space", memory_id=saved[index - 4])
        if index % 5 == 0:
            for door, principal in doors:
                door.search(principal, "space", queries[index % 3], limit=20)
    builds = [door.indexes.keyword_builds for door, _ in doors]
    fresh = services(WordsEmbedder())
    everyone = [*doors, (fresh, _as(fresh.store, token))]  # type: ignore[arg-type]

    def answers(service: MemoryService, who: Principal) -> list[list[tuple[str, float, tuple[str, ...]]]]:
        return [
            [(hit.memory.id, hit.score, hit.matched_by) for hit in service.search(who, "space", q, limit=40)]
            for q in queries
        ]

    got = [answers(service, who) for service, who in everyone]
    assert got[0] == got[2] and got[1] == got[2]
    assert all(len(hits) == 40 for hits in got[2])
    assert [door.indexes.keyword_builds for door, _ in doors] == builds == [1, 1]


def test_a_door_behind_the_pruned_log_rebuilds_and_answers_right(
    services: Callable[..., MemoryService],
) -> None:
    first, second = services(change_log_keep_commits=2), services()
    token = _device(first.store)  # type: ignore[arg-type]
    ada, ada_there = _as(first.store, token), _as(second.store, token)  # type: ignore[arg-type]
    first.save(ada, "t", "kept note one")
    assert len(second.search(ada_there, "t", "note")) == 1
    for index in range(6):
        first.save(ada, "t", f"later note {index}")
    gone = first.save(ada, "t", "doomed note")
    first.forget(ada, "t", memory_id=gone.id)
    found = second.search(ada_there, "t", "note", limit=20)
    assert sorted(hit.memory.content for hit in found) == sorted(
        ["kept note one", *(f"later note {index}" for index in range(6))]
    )
    assert second.indexes.keyword_builds == 2


def test_too_many_changes_rebuild_only_the_spaces_they_touch(services: Callable[..., MemoryService]) -> None:
    first, second = services(), services(change_log_max_rows=2)
    token = _device(first.store)  # type: ignore[arg-type]
    ada, ada_there = _as(first.store, token), _as(second.store, token)  # type: ignore[arg-type]
    first.save(ada, "busy", "first busy note")
    first.save(ada, "quiet", "the quiet note")
    second.search(ada_there, "busy", "note")
    second.search(ada_there, "quiet", "note")
    quiet = second.indexes._keyword.peek((ada.team_id, "quiet"))
    for index in range(4):
        first.save(ada, "busy", f"busy note {index}")
    assert len(second.search(ada_there, "busy", "note", limit=20)) == 5
    assert second.search(ada_there, "quiet", "note")[0].memory.content == "the quiet note"
    assert second.indexes._keyword.peek((ada.team_id, "quiet")) is quiet
    assert second.indexes.keyword_builds == 3  # busy twice, quiet once


def test_another_door_s_purge_and_alias_reach_a_door_at_once(services: Callable[..., MemoryService]) -> None:
    first, second = services(), services()
    token = _device(first.store)  # type: ignore[arg-type]
    ada = _as(first.store, token)  # type: ignore[arg-type]
    admin_token = first.store.create_device(person="root", admin=True)[1]
    root, root_there = _as(first.store, admin_token), _as(second.store, admin_token)  # type: ignore[arg-type]
    first.save(root, "gone", "a note to purge")
    first.save(root, "kept", "a note to keep")
    assert second.search(root_there, "gone", "note") and second.search(root_there, "kept", "note")
    kept = second.indexes._keyword.peek((ada.team_id, "kept"))
    assert second.space_tags(root_there, "kept") == ["kept"]
    first.store.purge(ada.team_id, ["gone"])
    first.set_alias(root, "also-kept", "kept")
    assert second.search(root_there, "gone", "note") == []
    assert second.space_tags(root_there, "kept") == ["kept", "also-kept"]  # not after the cache's TTL
    assert second.indexes._keyword.peek((ada.team_id, "kept")) is kept
