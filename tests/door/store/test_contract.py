"""The `Store` contract: every behaviour the memory service relies on, run against each store.

One suite, parametrised over the implementations (a new store joins `STORES` and `make_store`). Each
test gets a fresh, empty store: a SQLite file in its own folder, or a PostgreSQL database of its own
on the session's server (the `postgres` fixture).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from bli_memory.door.errors import DeviceRevoked, QueueFull
from bli_memory.door.model import Job, Principal, global_tag, hash_text, now_s
from bli_memory.door.store.base import (
    COPY_COLUMNS,
    COPY_TABLES,
    PRIMARY_KEYS,
    ImportedVersion,
    PurgeCount,
    key_of,
)
from bli_memory.door.store.roles import Store
from bli_memory.door.store.sqlite import SqliteStore
from tests.door.helpers import new_version, store_principal
from tests.door.store.helpers import STORES, open_kind


@pytest.fixture(params=STORES)
def make_store(request: pytest.FixtureRequest) -> Iterator[Callable[..., Store]]:
    """(folder, store options) -> the store of that folder (the same folder, the same data),
    closed at teardown."""
    opened: list[Store] = []

    def make(folder: Path, **options: object) -> Store:
        store = open_kind(request.param, folder, request, **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., Store], tmp_path: Path) -> Store:
    return make_store(tmp_path)


# ---------------------------------------------------------------------------- devices and tokens


def test_a_token_authenticates_its_device_until_revoked(store: Store) -> None:
    device_id, token = store.create_device(person="ada", team="acme", label="laptop")
    principal = store.authenticate(token)
    assert principal is not None
    assert (principal.person, principal.team, principal.device_id) == ("ada", "acme", device_id)
    assert store.authenticate(token + "x") is None
    [listed] = store.list_devices()
    assert listed["id"] == device_id and listed["label"] == "laptop" and listed["revoked_at"] is None
    assert token not in repr(listed)  # only the token's hash is kept
    assert store.revoke_device(device_id) == 0  # no jobs to cancel
    assert store.revoke_device(device_id) is None
    assert store.authenticate(token) is None


def test_admin_belongs_to_one_device_and_can_be_changed(store: Store) -> None:
    admin_device, admin_token = store.create_device(person="carol", admin=True)
    other_device, other_token = store.create_device(person="carol")
    admin = store.authenticate(admin_token)
    other = store.authenticate(other_token)
    assert admin is not None and admin.admin and other is not None and not other.admin
    assert store.set_device_admin(other_device, True) is True
    promoted = store.authenticate(other_token)
    assert promoted is not None and promoted.admin
    assert store.set_device_admin(admin_device, False) is True
    demoted = store.authenticate(admin_token)
    assert demoted is not None and not demoted.admin
    store.revoke_device(other_device)
    assert store.set_device_admin(other_device, False) is False


def test_revoking_a_device_cancels_its_jobs_and_a_claimed_one_may_not_write(store: Store) -> None:
    device_id, token = store.create_device(person="ada")
    ada = store.authenticate(token)
    assert ada is not None
    running_id = store.enqueue_job(ada, "t", "claimed before the revoke", None)
    queued_id = store.enqueue_job(ada, "t", "still queued", None)
    running = store.claim_job()
    assert running is not None and running.id == running_id
    assert store.job_may_write(running) is True
    assert store.revoke_device(device_id) == 2
    assert store.job_may_write(running) is False
    for job_id in (running_id, queued_id):
        job = store.get_job(ada.team_id, job_id)
        assert job is not None and job.status == "cancelled" and job.error is not None
    store.fail_job(running_id, "late failure", retry=True)  # never revives a cancelled job
    again = store.get_job(ada.team_id, running_id)
    assert again is not None and again.status == "cancelled"
    assert store.claim_job() is None
    with pytest.raises(DeviceRevoked):
        store.enqueue_job(ada, "t", "after the revoke", None)


def test_a_device_may_queue_only_so_many_jobs(make_store: Callable[..., Store], tmp_path: Path) -> None:
    store = make_store(tmp_path / "capped", max_pending_jobs=2)
    ada = store_principal(store)
    bob = store_principal(store, "bob")
    store.enqueue_job(ada, "t", "one", None)
    store.enqueue_job(ada, "t", "two", None)
    with pytest.raises(QueueFull):
        store.enqueue_job(ada, "t", "three", None)
    store.enqueue_job(bob, "t", "another device is not held up", None)
    while (claimed := store.claim_job()) is not None:  # the round may take bob's first
        store.finish_job(claimed.id, {})
        if claimed.device_id == ada.device_id:
            break
    store.enqueue_job(ada, "t", "room again", None)


def test_people_of_one_team_share_it_and_teams_are_apart(store: Store) -> None:
    ada = store_principal(store, "ada", "acme")
    bob = store_principal(store, "bob", "acme")
    eve = store_principal(store, "eve", "other")
    assert ada.team_id == bob.team_id != eve.team_id
    assert ada.person_id != bob.person_id


def test_a_jobs_principal_names_its_person_and_team(store: Store) -> None:
    ada = store_principal(store, "ada", "acme", admin=True)
    job_id = store.enqueue_job(ada, "t", "text", None)
    job = store.get_job(ada.team_id, job_id)
    assert job is not None
    again = store.principal_for_job(job)
    assert (again.person, again.team, again.person_id, again.device_id) == (
        "ada",
        "acme",
        ada.person_id,
        ada.device_id,
    )


# ---------------------------------------------------------------------------- aliases


def test_aliases_point_at_their_canonical_without_chains(store: Store) -> None:
    ada = store_principal(store)
    assert store.canonical_tag(ada.team_id, "old") == "old"
    store.put_alias(ada.team_id, "old", "mid")
    store.put_alias(ada.team_id, "mid", "new")  # "old" pointed at "mid": it now points at "new"
    assert store.canonical_tag(ada.team_id, "old") == "new"
    assert store.canonical_tag(ada.team_id, "mid") == "new"
    assert store.aliases_of(ada.team_id, "new") == ["mid", "old"]
    eve = store_principal(store, "eve", "other")
    assert store.canonical_tag(eve.team_id, "old") == "old"


# ---------------------------------------------------------------------------- memories


def test_versions_share_a_root_and_only_one_is_current(store: Store) -> None:
    ada = store_principal(store)
    first_id = store.insert_version(new_version(ada, "v1", custom_id="k", metadata={"a": 1}))
    first = store.get(ada.team_id, first_id)
    assert (
        first is not None and first.status == "current" and first.version == 1 and first.root_id == first_id
    )
    assert first.metadata == {"a": 1} and first.custom_id == "k"
    assert store.retire(first_id, "superseded") is True
    assert store.retire(first_id, "superseded") is False  # no longer current
    second_id = store.insert_version(new_version(ada, "v2", previous=first, custom_id="k"))
    second = store.get(ada.team_id, second_id)
    assert second is not None
    assert (second.version, second.root_id, second.previous_version_id) == (2, first_id, first_id)
    assert second.created_at == first.created_at
    assert [m.content for m in store.versions(ada.team_id, first_id)] == ["v1", "v2"]
    assert [m.status for m in store.versions(ada.team_id, first_id)] == ["superseded", "current"]
    current = store.current_version(ada.team_id, first_id)
    assert current is not None and current.id == second_id
    assert store.retire(second_id, "forgotten") is True
    assert store.current_version(ada.team_id, first_id) is None
    forgotten = store.get(ada.team_id, second_id)
    assert forgotten is not None and forgotten.status == "forgotten" and forgotten.superseded_at is not None


def test_reads_never_cross_teams(store: Store) -> None:
    ada = store_principal(store)
    eve = store_principal(store, "eve", "other")
    memory_id = store.insert_version(new_version(ada, "secret plan"))
    assert store.get(eve.team_id, memory_id) is None
    assert store.versions(eve.team_id, memory_id) == []
    assert store.current_by_ids(eve.team_id, [memory_id]) == {}
    assert store.updated_at(eve.team_id, [memory_id]) == {}
    assert store.current_by_hash(eve.team_id, ["t"], hash_text("secret plan")) is None
    assert store.count_current(eve.team_id, ["t"]) == 0


def test_current_rows_are_found_by_hash_custom_id_and_ids(store: Store) -> None:
    ada = store_principal(store)
    older = store.insert_version(new_version(ada, "same text", tag="a", when=1000.0))
    newer = store.insert_version(new_version(ada, "same text", tag="b", when=2000.0))
    keyed = store.insert_version(new_version(ada, "keyed", tag="a", custom_id="k1"))
    by_hash = store.current_by_hash(ada.team_id, ["a", "b"], hash_text("same text"))
    assert by_hash is not None and by_hash.id == newer  # the most recently changed
    only_a = store.current_by_hash(ada.team_id, ["a"], hash_text("same text"))
    assert only_a is not None and only_a.id == older
    by_custom = store.current_by_custom_id(ada.team_id, ["a", "b"], "k1")
    assert by_custom is not None and by_custom.id == keyed
    assert store.current_by_custom_id(ada.team_id, ["b"], "k1") is None
    rows = store.current_by_ids(ada.team_id, [older, newer, "mem_missing"])
    assert set(rows) == {older, newer} and rows[older].person == "ada"
    assert store.updated_at(ada.team_id, [older, newer]) == {older: 1000.0, newer: 2000.0}
    store.retire(older, "forgotten")
    assert older not in store.current_by_ids(ada.team_id, [older])
    assert store.count_current(ada.team_id, ["a", "b"]) == 2


def test_many_ids_are_looked_up_at_once(store: Store) -> None:
    ada = store_principal(store)
    ids = [store.insert_version(new_version(ada, f"note {index}")) for index in range(1200)]
    assert len(store.current_by_ids(ada.team_id, ids)) == 1200
    assert len(store.updated_at(ada.team_id, ids)) == 1200


def test_pinned_and_recent_split_the_current_rows(store: Store) -> None:
    ada = store_principal(store)
    store.insert_version(new_version(ada, "pinned fact", metadata={"pinned": True}, when=10.0))
    for index in range(5):
        store.insert_version(new_version(ada, f"note {index}", when=100.0 + index))
    assert [m.content for m in store.pinned(ada.team_id, ["t"])] == ["pinned fact"]
    assert [m.content for m in store.recent(ada.team_id, ["t"], 3)] == ["note 4", "note 3", "note 2"]


def test_a_pin_is_never_indexed_embedded_nor_a_duplicate_of_an_ordinary_row(store: Store) -> None:
    """Pins are loaded whole at session start and never searched (docs/scopes-and-pins.md): no
    search index, vector matrix or backfill sees one, and a save's duplicate check never finds one."""
    ada = store_principal(store)
    pinned = {"pinned": True}
    pin = store.insert_version(
        new_version(ada, "pinned fact", metadata=pinned, vector=np.ones(4, dtype=np.float32))
    )
    bare = store.insert_version(new_version(ada, "pinned without a vector", metadata=pinned))
    plain = store.insert_version(new_version(ada, "plain fact", vector=np.ones(4, dtype=np.float32)))
    assert [row.id for row in store.index_rows(ada.team_id, "t")] == [plain]
    assert store.count_current(ada.team_id, ["t"]) == 1  # what a snapshot's count is checked against
    assert set(dict(store.current_vectors(ada.team_id, "t", "model-a"))) == {plain}
    assert bare not in {task.id for task in store.vectors_missing("model-a", 10)}
    assert store.current_by_hash(ada.team_id, ["t"], hash_text("pinned fact")) is None
    assert [m.id for m in store.pinned(ada.team_id, ["t"])] == [pin, bare]


def test_index_rows_and_spaces_list_current_rows_in_save_order(store: Store) -> None:
    ada = store_principal(store)
    first = store.insert_version(new_version(ada, "first", tag="x", when=5.0))
    second = store.insert_version(new_version(ada, "second", tag="x", when=1.0))
    store.insert_version(new_version(ada, "elsewhere", tag="y", when=9.0))
    store.retire(first, "superseded")
    rows = list(store.index_rows(ada.team_id, "x"))
    assert [(row.id, row.content, row.device_id, row.updated_at) for row in rows] == [
        (second, "second", ada.device_id, 1.0)
    ]
    assert store.spaces(10) == [(ada.team_id, "y"), (ada.team_id, "x")]
    assert store.spaces(1) == [(ada.team_id, "y")]


def test_spaces_are_the_current_ones_newest_first_ties_by_team_then_tag(store: Store) -> None:
    ada = store_principal(store)
    eve = store_principal(store, "eve", team="other")
    store.insert_version(new_version(eve, "tied b", tag="b", when=7.0))
    store.insert_version(new_version(ada, "tied b", tag="b", when=7.0))
    store.insert_version(new_version(ada, "tied a", tag="a", when=7.0))
    store.insert_version(new_version(ada, "older", tag="c", when=3.0))
    gone = store.insert_version(new_version(ada, "only retired", tag="d", when=9.0))
    store.retire(gone, "forgotten")
    assert store.spaces(10) == [
        (ada.team_id, "a"),
        (ada.team_id, "b"),
        (eve.team_id, "b"),
        (ada.team_id, "c"),
    ]
    assert store.spaces(2) == [(ada.team_id, "a"), (ada.team_id, "b")]
    assert store.spaces(10, eve.team_id) == [(eve.team_id, "b")]
    assert store.spaces(1, ada.team_id) == [(ada.team_id, "a")]


# ---------------------------------------------------------------------------- vectors


def test_vectors_are_kept_per_model_and_backfilled_only_while_current(store: Store) -> None:
    ada = store_principal(store)
    with_vector = store.insert_version(new_version(ada, "has one", vector=np.ones(4, dtype=np.float32)))
    without = store.insert_version(new_version(ada, "has none"))
    retired = store.insert_version(new_version(ada, "retired"))
    store.retire(retired, "forgotten")
    missing = {task.id for task in store.vectors_missing("model-a", 10)}
    assert missing == {without}
    assert {task.id for task in store.vectors_missing("model-b", 10)} == {with_vector, without}
    [task] = store.vectors_missing("model-a", 10)
    assert store.set_vector(task.id, "wrong hash", "model-a", np.zeros(4, dtype=np.float32)) is False
    assert store.set_vector(task.id, task.content_hash, "model-a", np.full(4, 2.0, dtype=np.float32))
    assert store.vectors_missing("model-a", 10) == []
    vectors = dict(store.current_vectors(ada.team_id, "t", "model-a"))
    assert set(vectors) == {with_vector, without}
    assert np.array_equal(vectors[without], np.full(4, 2.0, dtype=np.float32))
    assert dict(store.current_vectors(ada.team_id, "t", "model-b")) == {}


def test_vectors_of_given_ids_are_the_current_ones_of_the_team_and_model(store: Store) -> None:
    ada, bob = store_principal(store), store_principal(store, person="bob", team="other")
    ids = [
        store.insert_version(new_version(ada, f"m{n}", vector=np.full(4, n, dtype=np.float32)))
        for n in range(3)
    ]
    plain = store.insert_version(new_version(ada, "no vector"))
    theirs = store.insert_version(new_version(bob, "another team's", vector=np.ones(4, dtype=np.float32)))
    store.retire(ids[2], "forgotten")
    found = store.vectors_of(ada.team_id, [*ids, plain, theirs, "mem_unknown", ids[0]], "model-a")
    assert set(found) == {ids[0], ids[1]}
    assert np.array_equal(found[ids[1]], np.full(4, 1, dtype=np.float32))
    assert store.vectors_of(ada.team_id, ids, "another model") == {}
    assert store.vectors_of(ada.team_id, [], "model-a") == {}


# ---------------------------------------------------------------------------- transactions


def test_a_failed_transaction_writes_nothing_and_a_nested_one_rolls_back_alone(store: Store) -> None:
    ada = store_principal(store)
    with pytest.raises(RuntimeError), store.transaction():
        store.insert_version(new_version(ada, "doomed"))
        raise RuntimeError("boom")
    assert store.count_current(ada.team_id, ["t"]) == 0
    with store.transaction():
        store.insert_version(new_version(ada, "kept"))
        with pytest.raises(RuntimeError), store.transaction():
            store.insert_version(new_version(ada, "inner, doomed"))
            raise RuntimeError("boom")
    assert [row.content for row in store.index_rows(ada.team_id, "t")] == ["kept"]


def test_another_connection_s_commit_is_noticed(
    store: Store, make_store: Callable[..., Store], tmp_path: Path
) -> None:
    ada = store_principal(store)
    store.changed_elsewhere()  # the baseline
    assert store.changed_elsewhere() is False
    store.insert_version(new_version(ada, "own write"))
    assert store.changed_elsewhere() is False  # our own commits do not count
    other = make_store(tmp_path)
    other.insert_version(new_version(ada, "their write"))
    other.close()
    assert store.changed_elsewhere() is True
    assert store.changed_elsewhere() is False


def test_another_connection_s_write_reaches_changes_elsewhere(
    store: Store, make_store: Callable[..., Store], tmp_path: Path
) -> None:
    """Either the changed memory as it is now (a store with a change log) or "everything"."""
    ada = store_principal(store)
    space = (ada.team_id, "t")
    store.changes_elsewhere({space})  # the baseline
    store.insert_version(new_version(ada, "own write"))
    assert store.changes_elsewhere({space}).seen is False  # our own commits do not count
    other = make_store(tmp_path)
    theirs = other.insert_version(new_version(ada, "their write"))
    other.close()
    changes = store.changes_elsewhere({space})
    assert changes.seen and changes.everything is (store.name == "sqlite")  # SQLite keeps no log
    assert changes.everything or [row.content for row in changes.current[space]] == ["their write"]
    assert changes.everything or [row.id for row in changes.current[space]] == [theirs]
    assert store.changes_elsewhere({space}).seen is False


def test_writes_from_many_threads_all_land(store: Store) -> None:
    ada = store_principal(store)

    def write(start: int) -> None:
        for index in range(start, start + 25):
            store.insert_version(new_version(ada, f"thread note {index}"))

    threads = [threading.Thread(target=write, args=(start,)) for start in range(0, 100, 25)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert store.count_current(ada.team_id, ["t"]) == 100


# ---------------------------------------------------------------------------- jobs


def test_jobs_are_claimed_oldest_first_once_and_finish_or_fail(store: Store) -> None:
    ada = store_principal(store)
    first = store.enqueue_job(ada, "t", "first exchange", {"source": "stop"})
    second = store.enqueue_job(ada, "t", "second exchange", None)
    claimed = store.claim_job()
    assert isinstance(claimed, Job) and claimed.id == first and claimed.status == "running"
    assert claimed.attempts == 1 and claimed.metadata == {"source": "stop"}
    store.finish_job(first, {"added": 2})
    done = store.get_job(ada.team_id, first)
    assert done is not None and done.status == "done" and done.outcome == {"added": 2}
    assert done.finished_at is not None
    again = store.claim_job()
    assert again is not None and again.id == second
    store.fail_job(second, "ValueError: x", retry=True)
    retried = store.claim_job()
    assert retried is not None and retried.id == second and retried.attempts == 2
    store.fail_job(second, "ValueError: x", retry=False)
    failed = store.get_job(ada.team_id, second)
    assert failed is not None and failed.status == "failed" and failed.error == "ValueError: x"
    assert store.claim_job() is None
    eve = store_principal(store, "eve", "other")
    assert store.get_job(eve.team_id, first) is None


def test_interrupted_jobs_go_back_to_the_queue_until_their_attempts_run_out(store: Store) -> None:
    ada = store_principal(store)
    job_id = store.enqueue_job(ada, "t", "exchange", None)
    for attempt in range(1, 3):
        claimed = store.claim_job()
        assert claimed is not None and claimed.attempts == attempt
        assert store.requeue_interrupted_jobs(max_attempts=3) == 1
    claimed = store.claim_job()
    assert claimed is not None and claimed.attempts == 3
    assert store.requeue_interrupted_jobs(max_attempts=3) == 0
    job = store.get_job(ada.team_id, job_id)
    assert job is not None and job.status == "failed"


# ---------------------------------------------------------------------------- experience


def test_experience_is_inserted_once_and_a_different_reuse_of_its_id_conflicts(store: Store) -> None:
    ada = store_principal(store)
    entry = "0b0e8f1e-1111-4222-8333-444455556666"
    first = store.record_experience(
        ada, entry_id=entry, store="bli", verdict="win", reason="found it", created_at=1000.0
    )
    assert first == "inserted"
    again = store.record_experience(
        ada, entry_id=entry, store="bli", verdict="win", reason="found it", created_at=1000.0
    )
    assert again == "identical"
    other = store.record_experience(
        ada, entry_id=entry, store="bli", verdict="loss", reason="found it", created_at=1000.0
    )
    assert other == "conflict"
    eve = store_principal(store, "eve", "other")  # ids are scoped to their team
    assert (
        store.record_experience(eve, entry_id=entry, store="bli", verdict="loss", reason="x", created_at=None)
        == "inserted"
    )
    assert store.experience_count(ada.team_id, 0.0) == 1


def test_experience_pages_in_created_at_then_id_order(store: Store) -> None:
    ada = store_principal(store)
    for index in range(7):
        store.record_experience(
            ada,
            entry_id=f"00000000-0000-4000-8000-00000000000{index}",
            store="bli",
            verdict="win",
            reason=f"r{index}",
            created_at=2000.0 - index // 2,
        )
    page = store.experience_page(ada.team_id, 0.0, (0.0, ""), 3)
    assert [row["reason"] for row in page] == ["r6", "r4", "r5"]
    assert page[0]["person"] == "ada"
    after = (page[-1]["created_at"], page[-1]["id"])
    rest = store.experience_page(ada.team_id, 0.0, after, 10)
    assert [row["reason"] for row in rest] == ["r2", "r3", "r0", "r1"]
    assert store.experience_count(ada.team_id, 1999.0) == 4


def test_the_store_names_itself(store: Store, request: pytest.FixtureRequest) -> None:
    assert store.name == request.node.callspec.params["make_store"]
    assert store.describe().startswith(store.name) and store.version


# ---------------------------------------------------------------------------- browsing and reset


def _page_through(store: Store, team_id: int, tags: list[str], limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    before: tuple[float, str] | None = None
    while True:
        page = store.page_current(team_id, tags, limit, before)
        if not page:
            return pages
        pages.append([row.memory.content for row in page])
        last = page[-1].memory
        before = (last.updated_at, last.id)


def test_browsing_pages_current_unpinned_rows_newest_first_with_who_saved_them(store: Store) -> None:
    ada, bob = store_principal(store, "ada"), store_principal(store, "bob")
    eve = store_principal(store, "eve", team="other")
    for index in range(5):
        store.insert_version(new_version(ada if index % 2 else bob, f"note {index}", when=100.0 + index))
    store.insert_version(new_version(ada, "pinned", metadata={"pinned": True}, when=500.0))
    store.insert_version(new_version(ada, "other tag", tag="u", when=600.0))
    store.insert_version(new_version(eve, "other team", when=700.0))
    retired = store.insert_version(new_version(ada, "retired", when=800.0))
    store.retire(retired, "forgotten")

    assert _page_through(store, ada.team_id, ["t"], 2) == [
        ["note 4", "note 3"],
        ["note 2", "note 1"],
        ["note 0"],
    ]
    assert [row.memory.content for row in store.page_current(ada.team_id, ["t", "u"], 2, None)] == [
        "other tag",
        "note 4",
    ]
    first = store.page_current(ada.team_id, ["t"], 5, None)
    assert [(row.memory.person, row.device_id) for row in first[:2]] == [
        ("bob", bob.device_id),
        ("ada", ada.device_id),
    ]
    assert store.page_current(eve.team_id, ["t"], 5, None)[0].memory.content == "other team"


def test_browsing_breaks_ties_of_the_same_time_by_id_and_pages_through_them(store: Store) -> None:
    ada = store_principal(store)
    ids = [store.insert_version(new_version(ada, f"same moment {index}", when=50.0)) for index in range(7)]
    pages = _page_through(store, ada.team_id, ["t"], 3)
    seen = [content for page in pages for content in page]
    assert sorted(seen) == sorted(f"same moment {index}" for index in range(7)) and len(pages) == 3
    order = [row.memory.id for row in store.page_current(ada.team_id, ["t"], 7, None)]
    assert order == sorted(ids, reverse=True)


def test_a_row_written_between_pages_neither_repeats_nor_shifts_the_next_page(store: Store) -> None:
    ada = store_principal(store)
    for index in range(6):
        store.insert_version(new_version(ada, f"old {index}", when=10.0 + index))
    first = store.page_current(ada.team_id, ["t"], 3, None)
    store.insert_version(new_version(ada, "written while paging", when=now_s()))
    store.insert_version(new_version(ada, "imported with an old date", when=10.5))
    last = first[-1].memory
    second = store.page_current(ada.team_id, ["t"], 3, (last.updated_at, last.id))
    assert [row.memory.content for row in first] == ["old 5", "old 4", "old 3"]
    assert [row.memory.content for row in second] == ["old 2", "old 1", "imported with an old date"]


def test_purge_removes_a_team_or_some_tags_with_their_jobs_and_nothing_else(store: Store) -> None:
    ada = store_principal(store, "ada", team="acme")
    eve = store_principal(store, "eve", team="other")
    first = store.insert_version(new_version(ada, "v1", tag="a"))
    old = store.get(ada.team_id, first)
    assert old is not None
    store.retire(first, "superseded")
    store.insert_version(new_version(ada, "v2", tag="a", previous=old))
    store.insert_version(new_version(ada, "kept in b", tag="b"))
    kept = store.insert_version(new_version(eve, "other team", tag="a"))
    store.enqueue_job(ada, "a", "job of a", None)
    store.enqueue_job(ada, "b", "job of b", None)
    other_job = store.enqueue_job(eve, "a", "other team's job", None)
    store.put_alias(ada.team_id, "alias-a", "a")

    assert store.team_named("acme") == ada.team_id and store.team_named("nobody") is None
    assert store.purge(ada.team_id, ["a"], dry_run=True) == PurgeCount(memories=2, current=1, jobs=1)
    assert store.count_current(ada.team_id, ["a"]) == 1
    assert store.purge(ada.team_id, ["a"]) == PurgeCount(memories=2, current=1, jobs=1)
    assert store.versions(ada.team_id, first) == [] and store.count_current(ada.team_id, ["a"]) == 0
    assert store.count_current(ada.team_id, ["b"]) == 1
    assert store.canonical_tag(ada.team_id, "alias-a") == "a"
    assert store.purge(ada.team_id, None) == PurgeCount(memories=1, current=1, jobs=1)
    assert store.count_current(ada.team_id, ["a", "b"]) == 0
    assert store.get(eve.team_id, kept) is not None and store.get_job(eve.team_id, other_job) is not None
    assert [device["person"] for device in store.list_devices()] == ["ada", "eve"]


# ---------------------------------------------------------------------------- export and import (whole history)


def _imported(who: Principal, memory_id: str, content: str, **fields: object) -> ImportedVersion:
    row: dict[str, object] = {
        "team_id": who.team_id,
        "id": memory_id,
        "container_tag": "t",
        "content": content,
        "content_hash": hash_text(content),
        "kind": "memory",
        "status": "current",
        "version": 1,
        "root_id": memory_id,
        "previous_version_id": None,
        "custom_id": None,
        "metadata": None,
        "person_id": who.person_id,
        "device_id": who.device_id,
        "created_at": 1000.25,
        "updated_at": 1000.25,
        "superseded_at": None,
    }
    row.update(fields)
    return ImportedVersion(**row)  # type: ignore[arg-type]


def test_rows_page_reads_every_status_in_insert_order_by_keyset(store: Store) -> None:
    ada = store_principal(store)
    eve = store_principal(store, "eve", "other")
    first = store.insert_version(new_version(ada, "v1", tag="a"))
    other_space = store.insert_version(new_version(ada, "elsewhere", tag="b"))
    store.retire(first, "superseded")
    previous = store.get(ada.team_id, first)
    second = store.insert_version(new_version(ada, "v2", tag="a", previous=previous))
    gone = store.insert_version(new_version(ada, "gone", tag="a"))
    store.retire(gone, "forgotten")
    store.insert_version(new_version(eve, "not ada's", tag="a"))
    every = store.rows_page(ada.team_id, None, None, 10, own_global=global_tag(ada.person_id))
    assert [row.id for row in every] == [first, other_space, second, gone]
    assert [row.status for row in every] == ["superseded", "current", "current", "forgotten"]
    assert all(row.person is None for row in every)
    space_a = store.rows_page(ada.team_id, ["a"], None, 2, own_global=global_tag(ada.person_id))
    assert [row.id for row in space_a] == [first, second]
    assert [row.id for row in store.rows_page(ada.team_id, ["a"], second, 2, own_global="")] == [gone]
    assert store.rows_page(ada.team_id, ["a"], gone, 2, own_global="") == []
    assert store.rows_page(ada.team_id, None, "mem_unknown", 2, own_global="") == []
    assert (
        store.rows_page(eve.team_id, None, first, 2, own_global="") == []
    )  # another team's row is no cursor


def test_rows_page_of_every_space_reads_no_other_persons_global_space(store: Store) -> None:
    """Every space of a team is its shared spaces and the reader's own global space: a teammate's
    global rows (pins among them) are theirs alone, on every store."""
    ada = store_principal(store)
    bob = store_principal(store, "bob")
    shared = store.insert_version(new_version(bob, "the team's", tag="repo"))
    own = store.insert_version(new_version(ada, "ada's own", tag=global_tag(ada.person_id)))
    store.insert_version(new_version(bob, "bob's own", tag=global_tag(bob.person_id)))
    store.insert_version(
        new_version(bob, "bob's pin", tag=global_tag(bob.person_id), metadata={"pinned": True})
    )
    lookalike = store.insert_version(new_version(bob, "a space named like one", tag="BLI:global:1"))
    every = store.rows_page(ada.team_id, None, None, 10, own_global=global_tag(ada.person_id))
    assert [row.id for row in every] == [shared, own, lookalike]


def test_an_imported_row_keeps_its_id_chain_status_and_times(store: Store) -> None:
    ada = store_principal(store)
    assert store.insert_imported(_imported(ada, "mem_old1", "v1", status="superseded", superseded_at=1500.5))
    assert store.insert_imported(
        _imported(
            ada,
            "mem_old2",
            "v2",
            version=2,
            root_id="mem_old1",
            previous_version_id="mem_old1",
            custom_id="k",
            metadata={"pinned": True, "source": "import:jsonl"},
            updated_at=1500.5,
        )
    )
    versions = store.versions(ada.team_id, "mem_old1")
    assert [(m.id, m.version, m.status) for m in versions] == [
        ("mem_old1", 1, "superseded"),
        ("mem_old2", 2, "current"),
    ]
    first, second = versions
    assert (first.created_at, first.updated_at, first.superseded_at) == (1000.25, 1000.25, 1500.5)
    assert (second.previous_version_id, second.custom_id, second.updated_at) == ("mem_old1", "k", 1500.5)
    assert [m.id for m in store.pinned(ada.team_id, ["t"])] == ["mem_old2"]  # pinned by its metadata
    # a pin stays out of the duplicate checks and the search index, imported or not
    assert store.current_by_custom_id(ada.team_id, ["t"], "k") is None
    assert list(store.index_rows(ada.team_id, "t")) == []
    assert [row.id for row in store.rows_page(ada.team_id, ["t"], None, 10, own_global="")] == [
        "mem_old1",
        "mem_old2",
    ]


def test_an_imported_id_that_exists_in_any_team_writes_nothing(store: Store) -> None:
    ada = store_principal(store)
    eve = store_principal(store, "eve", "other")
    assert store.insert_imported(_imported(ada, "mem_taken", "ada's"))
    assert store.insert_imported(_imported(eve, "mem_taken", "eve's")) is False
    assert store.insert_imported(_imported(ada, "mem_taken", "again")) is False
    assert store.get(eve.team_id, "mem_taken") is None
    kept = store.get(ada.team_id, "mem_taken")
    assert kept is not None and kept.content == "ada's"


# ---------------------------------------------------------------------------- copying a store (migrate)


def _fill_every_table(store: Store) -> dict[str, str]:
    """One or more rows in every copied table; the tokens by person."""
    tokens = {}
    for person, team, admin in (("ada", "acme", True), ("bob", "acme", False), ("eve", "zeta", False)):
        _, tokens[person] = store.create_device(person=person, team=team, admin=admin, label=f"{person}'s")
    ada, bob, eve = (store.authenticate(tokens[name]) for name in ("ada", "bob", "eve"))
    assert ada is not None and bob is not None and eve is not None
    store.put_alias(ada.team_id, "old-name", "t")
    first = store.get(
        ada.team_id, store.insert_version(new_version(ada, "first", metadata={"pinned": True, "n": 1.5}))
    )
    assert first is not None
    store.insert_version(new_version(ada, "second", previous=first, vector=np.arange(4, dtype=np.float32)))
    store.retire(first.id, "superseded")
    gone = store.insert_version(new_version(eve, "gone", tag="z", custom_id="doc-1"))
    store.retire(gone, "forgotten")
    job = store.enqueue_job(bob, "t", "an exchange", {"source": "stop-hook"})
    claimed = store.claim_job()
    assert claimed is not None and claimed.id == job
    store.finish_job(job, {"saved": 2})
    store.enqueue_job(bob, "t", "still queued", None)
    store.record_experience(ada, entry_id="e1", store="bli", verdict="win", reason="found it", created_at=5.0)
    store.record_experience(eve, entry_id="e1", store="bli", verdict="loss", reason="missed", created_at=6.0)
    store.put_hook_stats(ada, [("2026-09-06T14", '{"prompt":{"runs":2}}'), ("2026-09-06T15", "{}")])
    store.put_hook_stats(eve, [("2026-09-06T14", '{"stop":{"runs":1}}')])
    return tokens


def _dump_all(store: Store, table: str, batch: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    after = None
    while True:
        page = store.dump_rows(table, after, batch)
        rows += page
        if len(page) < batch:
            return rows
        after = key_of(table, page[-1])


def _canonical(store: Store, table: str) -> list[bytes]:
    """A table's rows as migrate compares them (the same rows give the same bytes in any store)."""
    from bli_memory.door.migrate import canonical_row

    return [canonical_row(table, row) for row in store.dump_rows(table, None, 1000)]


def test_dump_rows_pages_every_table_in_key_order_with_its_columns(store: Store) -> None:
    _fill_every_table(store)
    for table in COPY_TABLES:
        whole = store.dump_rows(table, None, 1000)
        assert whole, table
        assert all(set(row) == set(COPY_COLUMNS[table]) for row in whole), table
        keys = [key_of(table, row) for row in whole]
        assert keys == sorted(keys) and len(set(keys)) == len(keys), table
        assert _dump_all(store, table, 1) == whole, table  # one row a page, each after the last key
        assert store.dump_rows(table, keys[-1], 10) == []
    memories = store.dump_rows("memories", None, 100)
    assert [row["content"] for row in memories] == ["first", "second", "gone"]  # save order (rowid)
    assert [row["status"] for row in memories] == ["superseded", "current", "forgotten"]
    vector = memories[1]["embedding"]
    assert isinstance(vector, bytes)
    assert np.frombuffer(vector, dtype=np.float32).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert memories[1]["embedding_model"] == "model-a" and memories[0]["embedding"] is None
    assert [row["id"] for row in store.dump_rows("experience", None, 10)] == ["e1", "e1"]  # one per team
    with pytest.raises(ValueError):
        store.dump_rows("sqlite_master", None, 10)


def test_rows_loaded_into_an_empty_store_are_the_same_rows_and_work(
    store: Store, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    tokens = _fill_every_table(store)
    for name in sorted(STORES):  # from this store into each kind of store
        copy = open_kind(name, tmp_path / f"copy-{name}", request)
        try:
            for table in COPY_TABLES:
                rows = store.dump_rows(table, None, 1000)
                assert copy.load_rows(table, rows) == len(rows), table
                assert copy.load_rows(table, rows) == 0, table  # present keys are left alone
                assert _canonical(copy, table) == _canonical(store, table), table
            ada = copy.authenticate(tokens["ada"])
            assert ada is not None and ada.admin and (ada.person, ada.team) == ("ada", "acme")
            [current] = copy.index_rows(ada.team_id, "t")
            assert current.content == "second" and copy.canonical_tag(ada.team_id, "old-name") == "t"
            queued = copy.claim_job()
            assert queued is not None and queued.content == "still queued"
            # new rows take keys after the copied ones
            new_device, _ = copy.create_device(person="new", team="fresh")
            assert new_device not in {row["id"] for row in store.dump_rows("devices", None, 100)}
            teams = copy.dump_rows("teams", None, 100)
            assert teams[-1]["name"] == "fresh" and teams[-1]["id"] > teams[-2]["id"]
            fresh = copy.insert_version(new_version(ada, "after the copy"))
            rows = copy.dump_rows("memories", None, 100)
            assert rows[-1]["id"] == fresh and rows[-1]["rowid"] > rows[-2]["rowid"]
        finally:
            copy.close()


def test_load_rows_skips_keys_already_there_and_counts_what_it_inserted(store: Store) -> None:
    ada = store_principal(store)
    rows = [
        {column: None for column in COPY_COLUMNS["container_aliases"]}
        | {"team_id": ada.team_id, "alias": alias, "canonical": "t", "created_at": 1.0}
        for alias in ("a", "b", "c")
    ]
    assert store.load_rows("container_aliases", rows[:2]) == 2
    changed = [rows[0] | {"canonical": "elsewhere"}, rows[2]]
    assert store.load_rows("container_aliases", changed) == 1
    assert store.canonical_tag(ada.team_id, "a") == "t"  # left alone, not overwritten
    assert [key_of("container_aliases", row) for row in store.dump_rows("container_aliases", None, 10)] == [
        (ada.team_id, alias) for alias in ("a", "b", "c")
    ]
    assert store.load_rows("container_aliases", []) == 0


def test_a_batch_breaking_another_constraint_loads_nothing(store: Store) -> None:
    store_principal(store, team="acme")
    [team] = store.dump_rows("teams", None, 10)
    clash = [{"id": team["id"] + 1, "name": "new", "created_at": 1.0}, team | {"id": team["id"] + 2}]
    with pytest.raises(Exception):  # noqa: B017 - each store raises its own integrity error
        store.load_rows("teams", clash)  # the second repeats a unique name under a new key
    assert store.dump_rows("teams", None, 10) == [team]


def test_the_copied_columns_are_every_column_of_the_sqlite_schema(tmp_path: Path) -> None:
    import sqlite3

    SqliteStore(tmp_path / "schema.db").close()
    db = sqlite3.connect(tmp_path / "schema.db")
    try:
        for table in COPY_TABLES:
            columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
            assert columns == set(COPY_COLUMNS[table]), table
            assert set(PRIMARY_KEYS[table]) <= columns, table
    finally:
        db.close()


# ---------------------------------------------------------------------------- hook figures


def test_hook_stats_are_kept_per_device_and_hour_and_a_resend_replaces_the_hour(store: Store) -> None:
    laptop = store_principal(store, "ada")
    desktop = store_principal(store, "ada")
    assert store.put_hook_stats(laptop, [("2026-09-06T14", '{"prompt":{"runs":1}}')]) == 1
    assert store.put_hook_stats(desktop, [("2026-09-06T14", '{"prompt":{"runs":5}}')]) == 1
    again = [("2026-09-06T14", '{"prompt":{"runs":2}}'), ("2026-09-06T15", '{"stop":{"runs":1}}')]
    assert store.put_hook_stats(laptop, again) == 2
    assert store.put_hook_stats(laptop, again) == 2
    rows = store.hook_stats_since(laptop.team_id, "2026-09-06T00")
    assert rows == sorted(
        [
            (laptop.device_id, "2026-09-06T14", '{"prompt":{"runs":2}}'),
            (desktop.device_id, "2026-09-06T14", '{"prompt":{"runs":5}}'),
            (laptop.device_id, "2026-09-06T15", '{"stop":{"runs":1}}'),
        ],
        key=lambda row: (row[1], row[0]),
    )
    assert store.hook_stats_since(laptop.team_id, "2026-09-06T15") == [
        (laptop.device_id, "2026-09-06T15", '{"stop":{"runs":1}}')
    ]


def test_hook_stats_of_one_team_are_never_read_by_another(store: Store) -> None:
    ours = store_principal(store, "ada", team="one")
    theirs = store_principal(store, "bob", team="two")
    store.put_hook_stats(ours, [("2026-09-06T14", '{"prompt":{"runs":1}}')])
    store.put_hook_stats(theirs, [("2026-09-06T14", '{"prompt":{"runs":9}}')])
    assert store.hook_stats_since(theirs.team_id, "2026-01-01T00") == [
        (theirs.device_id, "2026-09-06T14", '{"prompt":{"runs":9}}')
    ]


def test_hook_stats_before_an_hour_are_pruned_in_batches_across_teams(store: Store) -> None:
    ours = store_principal(store, "ada", team="one")
    theirs = store_principal(store, "bob", team="two")
    store.put_hook_stats(ours, [("2026-08-01T10", "{}"), ("2026-08-06T13", "{}"), ("2026-08-06T14", "{}")])
    store.put_hook_stats(theirs, [("2026-07-30T00", "{}"), ("2026-09-06T14", "{}")])
    assert store.prune_hook_stats("2026-08-06T14", 2) == 2  # a batch at most
    assert store.prune_hook_stats("2026-08-06T14", 2) == 1  # less than a batch: nothing older is left
    assert store.prune_hook_stats("2026-08-06T14", 2) == 0
    assert [hour for _, hour, _ in store.hook_stats_since(ours.team_id, "2000-01-01T00")] == ["2026-08-06T14"]
    assert [hour for _, hour, _ in store.hook_stats_since(theirs.team_id, "2000-01-01T00")] == [
        "2026-09-06T14"
    ]
