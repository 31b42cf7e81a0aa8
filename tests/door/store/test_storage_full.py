"""A full store, for real: the door runs on a database capped at a few pages (SQLite's max_page_count,
through the serve-time test hook), so SQLite itself answers "database or disk is full" as it would on
a full disk. The door must name the cause, keep every acknowledged write, and say so on /healthz."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bli_memory.door.errors import StoreFull
from bli_memory.door.store.sqlite import SqliteStore
from tests.helpers import DoorProcess

#: the schema takes about 31 pages of 4 KiB; this leaves room for a few dozen small memories.
MAX_PAGES = 60
#: saves tried at most before the cap must have been met (each takes about a page).
MAX_SAVES = 200


def test_a_full_store_answers_503_storage_full_keeps_what_it_acknowledged_and_says_so(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "none", env={"BLI_MEMORY_DOOR_MAX_PAGES": str(MAX_PAGES)})
    status, health = door.get("/healthz", token="")
    assert status == 200 and health["ok"] is True, health
    status, keeper = door.post(
        "/api/memory/save",
        {"content": "keeper: the original note", "containerTag": "full", "customId": "keeper"},
    )
    assert status == 201
    saved: list[str] = [keeper["id"]]
    answer: dict[str, str] = {}
    for number in range(MAX_SAVES):
        status, answer = door.post(
            "/api/memory/save", {"content": f"note {number} " + "x" * 3000, "containerTag": "full"}
        )
        if status != 201:
            break
        saved.append(answer["id"])
    assert status == 503, answer
    assert answer == {"error": "storage_full", "message": answer["message"]} and "full" in answer["message"]
    assert 0 < len(saved) < MAX_SAVES
    log = door.wait_for_log("storage full")
    assert "database or disk is full" in log and door.db.name in log
    assert not any("internal error" in line for line in door.lines)

    # health says the store cannot write; reads go on
    status, health = door.get("/healthz", token="")
    assert status == 503 and health["ok"] is False and health["reason"] == "storage_full", health
    status, found = door.post("/api/memory/search", {"q": "note", "containerTag": "full", "limit": 100})
    assert status == 200 and {hit["id"] for hit in found["results"]} == set(saved)

    # a new version that does not fit leaves the current one in place, in the database and in search
    status, answer = door.post(
        "/api/memory/save",
        {"content": "keeper replaced " + "z" * 8000, "containerTag": "full", "customId": "keeper"},
    )
    assert status == 503, answer
    status, found = door.post("/api/memory/search", {"q": "keeper", "containerTag": "full"})
    assert [hit["id"] for hit in found["results"]] == [keeper["id"]]

    # other writes name the same cause (experience answered 502 insert_failed before)
    status, answer = door.post(
        "/api/memory/experience", {"store": "bli", "verdict": "win", "reason": "r " + "y" * 400}
    )
    for _ in range(20):
        if status == 503:
            break
        status, answer = door.post(
            "/api/memory/experience", {"store": "bli", "verdict": "win", "reason": "r " + "y" * 400}
        )
    assert status == 503 and answer["error"] == "storage_full", answer

    # with room again (no cap), nothing acknowledged was lost and writing works
    door.stop()
    door.extra_env = {}
    door.start()
    status, health = door.get("/healthz", token="")
    assert status == 200 and health["ok"] is True
    status, found = door.post("/api/memory/search", {"q": "note", "containerTag": "full", "limit": 100})
    assert status == 200 and {hit["id"] for hit in found["results"]} == set(saved)
    status, _ = door.post("/api/memory/save", {"content": "room again", "containerTag": "full"})
    assert status == 201


def test_the_sqlite_store_names_a_full_file_store_full_and_keeps_what_it_had(tmp_path: Path) -> None:
    """The store turns SQLite's "database or disk is full" into `StoreFull` at its one transaction
    boundary, whoever writes (a plain insert, a job, a nested transaction), and rolls back cleanly."""
    store = SqliteStore(tmp_path / "memory.db")
    store.limit_pages(MAX_PAGES)
    _, token = store.create_device(person="ada")
    ada = store.authenticate(token)
    assert ada is not None
    written = 0
    with pytest.raises(StoreFull, match="database or disk is full"):
        for index in range(MAX_SAVES):
            with store.transaction():  # a nested write, as a job's reconcile makes them
                store.enqueue_job(ada, "t", f"job {index} " + "x" * 3000, None)
            written += 1
    assert 0 < written < MAX_SAVES
    assert store.get_job(ada.team_id, "job_missing") is None  # reads go on
    pending = [store.claim_job() for _ in range(written)]
    assert all(job is not None for job in pending) and store.claim_job() is None  # nothing half-written
    store.close()
