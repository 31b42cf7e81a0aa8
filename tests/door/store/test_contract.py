"""The `Store` contract: every behaviour the memory service relies on, run against each store.

One suite, parametrised over the implementations (today SQLite; a new store joins `STORES`). Each
test gets a fresh, empty store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from bli_memory.door.model import Job, Memory, Principal, hash_text, now_s
from bli_memory.door.store.base import DeviceRevoked, NewVersion, QueueFull, Store
from bli_memory.door.store.sqlite import SqliteStore

#: each store by name: (folder, store options) -> a fresh store in that folder.
STORES: dict[str, Callable[..., Store]] = {
    "sqlite": lambda folder, **options: SqliteStore(folder / "memory.db", **options),
}


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened = STORES[request.param](tmp_path)
    yield opened
    opened.close()


def _principal(store: Store, person: str = "ada", team: str = "local", admin: bool = False) -> Principal:
    _, token = store.create_device(person=person, team=team, admin=admin)
    principal = store.authenticate(token)
    assert principal is not None
    return principal


def _row(
    who: Principal,
    content: str,
    *,
    tag: str = "t",
    previous: Memory | None = None,
    custom_id: str | None = None,
    metadata: dict[str, object] | None = None,
    vector: np.ndarray | None = None,
    when: float | None = None,
) -> NewVersion:
    moment = now_s() if when is None else when
    return NewVersion(
        team_id=who.team_id,
        container_tag=tag,
        content=content,
        content_hash=hash_text(content),
        kind="memory" if previous is None else previous.kind,
        custom_id=custom_id,
        metadata=metadata,
        person_id=who.person_id,
        device_id=who.device_id,
        created_at=moment if previous is None else previous.created_at,
        updated_at=moment,
        vector=vector,
        vector_model=None if vector is None else "model-a",
        previous=previous,
    )


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


def test_a_device_may_queue_only_so_many_jobs(
    store: Store, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store.close()
    store = STORES[request.node.callspec.params["store"]](tmp_path / "capped", max_pending_jobs=2)
    try:
        ada = _principal(store)
        bob = _principal(store, "bob")
        store.enqueue_job(ada, "t", "one", None)
        store.enqueue_job(ada, "t", "two", None)
        with pytest.raises(QueueFull):
            store.enqueue_job(ada, "t", "three", None)
        store.enqueue_job(bob, "t", "another device is not held up", None)
        claimed = store.claim_job()
        assert claimed is not None
        store.finish_job(claimed.id, {})
        store.enqueue_job(ada, "t", "room again", None)
    finally:
        store.close()  # the fixture closes its own, already closed, store again: harmless


def test_people_of_one_team_share_it_and_teams_are_apart(store: Store) -> None:
    ada = _principal(store, "ada", "acme")
    bob = _principal(store, "bob", "acme")
    eve = _principal(store, "eve", "other")
    assert ada.team_id == bob.team_id != eve.team_id
    assert ada.person_id != bob.person_id


def test_a_jobs_principal_names_its_person_and_team(store: Store) -> None:
    ada = _principal(store, "ada", "acme", admin=True)
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
    ada = _principal(store)
    assert store.canonical_tag(ada.team_id, "old") == "old"
    store.put_alias(ada.team_id, "old", "mid")
    store.put_alias(ada.team_id, "mid", "new")  # "old" pointed at "mid": it now points at "new"
    assert store.canonical_tag(ada.team_id, "old") == "new"
    assert store.canonical_tag(ada.team_id, "mid") == "new"
    assert store.aliases_of(ada.team_id, "new") == ["mid", "old"]
    eve = _principal(store, "eve", "other")
    assert store.canonical_tag(eve.team_id, "old") == "old"


# ---------------------------------------------------------------------------- memories


def test_versions_share_a_root_and_only_one_is_current(store: Store) -> None:
    ada = _principal(store)
    first_id = store.insert_version(_row(ada, "v1", custom_id="k", metadata={"a": 1}))
    first = store.get(ada.team_id, first_id)
    assert (
        first is not None and first.status == "current" and first.version == 1 and first.root_id == first_id
    )
    assert first.metadata == {"a": 1} and first.custom_id == "k"
    assert store.retire(first_id, "superseded") is True
    assert store.retire(first_id, "superseded") is False  # no longer current
    second_id = store.insert_version(_row(ada, "v2", previous=first, custom_id="k"))
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
    ada = _principal(store)
    eve = _principal(store, "eve", "other")
    memory_id = store.insert_version(_row(ada, "secret plan"))
    assert store.get(eve.team_id, memory_id) is None
    assert store.versions(eve.team_id, memory_id) == []
    assert store.current_by_ids(eve.team_id, [memory_id]) == {}
    assert store.updated_at(eve.team_id, [memory_id]) == {}
    assert store.current_by_hash(eve.team_id, ["t"], hash_text("secret plan")) is None
    assert store.count_current(eve.team_id, ["t"]) == 0


def test_current_rows_are_found_by_hash_custom_id_and_ids(store: Store) -> None:
    ada = _principal(store)
    older = store.insert_version(_row(ada, "same text", tag="a", when=1000.0))
    newer = store.insert_version(_row(ada, "same text", tag="b", when=2000.0))
    keyed = store.insert_version(_row(ada, "keyed", tag="a", custom_id="k1"))
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
    ada = _principal(store)
    ids = [store.insert_version(_row(ada, f"note {index}")) for index in range(1200)]
    assert len(store.current_by_ids(ada.team_id, ids)) == 1200
    assert len(store.updated_at(ada.team_id, ids)) == 1200


def test_pinned_and_recent_split_the_current_rows(store: Store) -> None:
    ada = _principal(store)
    store.insert_version(_row(ada, "pinned fact", metadata={"pinned": True}, when=10.0))
    for index in range(5):
        store.insert_version(_row(ada, f"note {index}", when=100.0 + index))
    assert [m.content for m in store.pinned(ada.team_id, ["t"])] == ["pinned fact"]
    assert [m.content for m in store.recent(ada.team_id, ["t"], 3)] == ["note 4", "note 3", "note 2"]


def test_index_rows_and_spaces_list_current_rows_in_save_order(store: Store) -> None:
    ada = _principal(store)
    first = store.insert_version(_row(ada, "first", tag="x", when=5.0))
    second = store.insert_version(_row(ada, "second", tag="x", when=1.0))
    store.insert_version(_row(ada, "elsewhere", tag="y", when=9.0))
    store.retire(first, "superseded")
    rows = list(store.index_rows(ada.team_id, "x"))
    assert [(row.id, row.content, row.device_id, row.updated_at) for row in rows] == [
        (second, "second", ada.device_id, 1.0)
    ]
    assert store.spaces(10) == [(ada.team_id, "y"), (ada.team_id, "x")]
    assert store.spaces(1) == [(ada.team_id, "y")]


# ---------------------------------------------------------------------------- vectors


def test_vectors_are_kept_per_model_and_backfilled_only_while_current(store: Store) -> None:
    ada = _principal(store)
    with_vector = store.insert_version(_row(ada, "has one", vector=np.ones(4, dtype=np.float32)))
    without = store.insert_version(_row(ada, "has none"))
    retired = store.insert_version(_row(ada, "retired"))
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
    ada, bob = _principal(store), _principal(store, person="bob", team="other")
    ids = [store.insert_version(_row(ada, f"m{n}", vector=np.full(4, n, dtype=np.float32))) for n in range(3)]
    plain = store.insert_version(_row(ada, "no vector"))
    theirs = store.insert_version(_row(bob, "another team's", vector=np.ones(4, dtype=np.float32)))
    store.retire(ids[2], "forgotten")
    found = store.vectors_of(ada.team_id, [*ids, plain, theirs, "mem_unknown", ids[0]], "model-a")
    assert set(found) == {ids[0], ids[1]}
    assert np.array_equal(found[ids[1]], np.full(4, 1, dtype=np.float32))
    assert store.vectors_of(ada.team_id, ids, "another model") == {}
    assert store.vectors_of(ada.team_id, [], "model-a") == {}


# ---------------------------------------------------------------------------- transactions


def test_a_failed_transaction_writes_nothing_and_a_nested_one_rolls_back_alone(store: Store) -> None:
    ada = _principal(store)
    with pytest.raises(RuntimeError), store.transaction():
        store.insert_version(_row(ada, "doomed"))
        raise RuntimeError("boom")
    assert store.count_current(ada.team_id, ["t"]) == 0
    with store.transaction():
        store.insert_version(_row(ada, "kept"))
        with pytest.raises(RuntimeError), store.transaction():
            store.insert_version(_row(ada, "inner, doomed"))
            raise RuntimeError("boom")
    assert [row.content for row in store.index_rows(ada.team_id, "t")] == ["kept"]


def test_another_connection_s_commit_is_noticed(
    store: Store, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    ada = _principal(store)
    store.changed_elsewhere()  # the baseline
    assert store.changed_elsewhere() is False
    store.insert_version(_row(ada, "own write"))
    assert store.changed_elsewhere() is False  # our own commits do not count
    other = STORES[request.node.callspec.params["store"]](tmp_path)
    try:
        other.insert_version(_row(ada, "their write"))
    finally:
        other.close()
    assert store.changed_elsewhere() is True
    assert store.changed_elsewhere() is False


def test_writes_from_many_threads_all_land(store: Store) -> None:
    ada = _principal(store)

    def write(start: int) -> None:
        for index in range(start, start + 25):
            store.insert_version(_row(ada, f"thread note {index}"))

    threads = [threading.Thread(target=write, args=(start,)) for start in range(0, 100, 25)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert store.count_current(ada.team_id, ["t"]) == 100


# ---------------------------------------------------------------------------- jobs


def test_jobs_are_claimed_oldest_first_once_and_finish_or_fail(store: Store) -> None:
    ada = _principal(store)
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
    eve = _principal(store, "eve", "other")
    assert store.get_job(eve.team_id, first) is None


def test_interrupted_jobs_go_back_to_the_queue_until_their_attempts_run_out(store: Store) -> None:
    ada = _principal(store)
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
    ada = _principal(store)
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
    eve = _principal(store, "eve", "other")  # ids are scoped to their team
    assert (
        store.record_experience(eve, entry_id=entry, store="bli", verdict="loss", reason="x", created_at=None)
        == "inserted"
    )
    assert store.experience_count(ada.team_id, 0.0) == 1


def test_experience_pages_in_created_at_then_id_order(store: Store) -> None:
    ada = _principal(store)
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
    assert store.name == request.node.callspec.params["store"]
    assert store.describe().startswith(store.name)
