"""The door as a process: crash safety, concurrency, a clean SIGTERM, the schema it records, and the
indexes a restarted door warms. Its command line is tests/door/test_cli.py."""

from __future__ import annotations

import http.client
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.helpers import BIN, DoorProcess

DOOR = str(BIN / "bli-memory-door")


def test_sigkill_mid_burst_loses_no_acknowledged_write(
    start_door: Callable[..., DoorProcess], tmp_path: Path
) -> None:
    door = start_door()
    acknowledged: list[str] = []
    stop = threading.Event()

    def writer(worker: int) -> None:
        index = 0
        while not stop.is_set():
            try:
                status, body = door.post(
                    "/api/memory/save",
                    {"content": f"burst {worker}-{index} fact", "containerTag": "repo_burst"},
                )
            except (OSError, http.client.HTTPException):
                return  # the door is gone: this write was never acknowledged
            if status == 201:
                acknowledged.append(body["id"])
            index += 1

    threads = [threading.Thread(target=writer, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while len(acknowledged) < 150 and time.monotonic() < deadline:
        time.sleep(0.01)
    door.kill()  # SIGKILL, with saves in flight
    stop.set()
    for thread in threads:
        thread.join(30)
    assert len(acknowledged) >= 150

    door.start()  # same file
    connection = sqlite3.connect(door.db)
    assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = {row[0] for row in connection.execute("SELECT id FROM memories WHERE status = 'current'")}
    assert set(acknowledged) <= stored
    status, body = door.post("/api/memory/save", {"content": "after the crash", "containerTag": "repo_burst"})
    assert status == 201
    status, found = door.post("/api/memory/search", {"q": "after the crash", "containerTag": "repo_burst"})
    assert status == 200 and found["results"][0]["id"] == body["id"]
    # every acknowledged write is findable by its words after the restart
    status, found = door.post(
        "/api/memory/search", {"q": "burst fact", "containerTag": "repo_burst", "limit": 100}
    )
    assert status == 200 and len(found["results"]) == 100
    for memory_id in acknowledged[:20]:
        content = connection.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
        number = content.split()[1]  # "burst 2-17 fact" -> "2-17"
        status, found = door.post("/api/memory/search", {"q": number, "containerTag": "repo_burst"})
        assert status == 200 and memory_id in [hit["id"] for hit in found["results"]]


def test_eight_concurrent_clients_keep_every_write(door: DoorProcess, tag: str) -> None:
    results: list[tuple[int, str]] = []
    lock = threading.Lock()

    def client(worker: int) -> None:
        token = door.pair(f"concurrent-{worker}")
        for index in range(25):
            status, body = door.post(
                "/api/memory/save",
                {"content": f"client {worker} wrote fact {index}", "containerTag": tag},
                token,
            )
            with lock:
                results.append((status, body["id"]))

    threads = [threading.Thread(target=client, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [status for status, _ in results] == [201] * 200
    assert len({memory_id for _, memory_id in results}) == 200
    status, answer = door.post(
        "/api/memory/search", {"q": "client wrote fact", "containerTag": tag, "limit": 100}
    )
    assert status == 200 and len(answer["results"]) == 100
    count = sqlite3.connect(door.db).execute(
        "SELECT count(*) FROM memories WHERE container_tag = ? AND status = 'current'", (tag,)
    )
    assert count.fetchone()[0] == 200


def test_sigterm_exits_cleanly(start_door: Callable[..., DoorProcess]) -> None:
    door = start_door()
    assert door.stop() == 0


def test_schema_version_is_recorded(door: DoorProcess) -> None:
    from bli_memory.door.store.sqlite import SCHEMA_VERSION

    version = sqlite3.connect(door.db).execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION
    journal = sqlite3.connect(door.db).execute("PRAGMA journal_mode").fetchone()[0]
    assert journal == "wal"


def test_a_restarted_door_warms_every_spaces_index_in_the_background(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door()
    for tag in ("repo_warm_a", "repo_warm_b"):
        status, _ = door.post("/api/memory/save", {"content": f"{tag} uses terraform", "containerTag": tag})
        assert status == 201
    assert not any("indexed" in line for line in door.lines)  # a new door has nothing to index
    door.stop()
    door.start()  # same file
    door.wait_for_log("indexed 2 spaces")
    status, found = door.post("/api/memory/search", {"q": "terraform", "containerTag": "repo_warm_b"})
    assert status == 200 and [hit["content"] for hit in found["results"]] == ["repo_warm_b uses terraform"]
