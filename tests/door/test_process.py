"""The door as a process: crash safety, concurrency, autopairing, its CLI and its start-up errors."""

from __future__ import annotations

import http.client
import json
import os
import socket
import sqlite3
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.helpers import BIN, LISTENING, DoorProcess

DOOR = str(BIN / "bli-memory-door")


def run_door(*args: str, home: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
    return subprocess.run([DOOR, *args], capture_output=True, text=True, env=env, timeout=timeout)


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


def _serve_until_listening(home: Path, *args: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share"), "USER": "dana"}
    process = subprocess.Popen(
        [DOOR, "serve", "--port", "0", "--embedder", "none", *args],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    assert process.stderr is not None
    for line in process.stderr:
        lines.append(line)
        if line.startswith(LISTENING):
            return process, line[len(LISTENING) :].strip(), lines
    raise AssertionError("no listening line: " + "".join(lines))


def test_serve_pairs_the_local_user_once_with_a_private_session_file(tmp_path: Path) -> None:
    import urllib.request

    process, url, lines = _serve_until_listening(tmp_path)
    try:
        session = tmp_path / ".config" / "bli-cockpit" / "session.json"
        assert stat.S_IMODE(session.stat().st_mode) == 0o600
        assert stat.S_IMODE(session.parent.stat().st_mode) == 0o700
        data = json.loads(session.read_text())
        assert data["dashboard_url"] == url and data["device_token"].startswith("bli_")
        assert any("paired local user 'dana'" in line for line in lines)
        assert not any(data["device_token"] in line for line in lines)
        request = urllib.request.Request(
            url + "/api/memory/save",
            data=json.dumps({"content": "autopaired works", "containerTag": "t"}).encode(),
            headers={"Authorization": f"Bearer {data['device_token']}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201
        # the default database lives under the XDG data folder
        assert (tmp_path / "share" / "bli-memory" / "memory.db").exists()
    finally:
        process.terminate()
        process.wait(15)
    assert process.returncode == 0
    before = session.read_bytes()
    process, _, lines = _serve_until_listening(tmp_path)
    process.terminate()
    process.wait(15)
    assert session.read_bytes() == before
    assert not any("paired" in line for line in lines)


def test_no_autopair_writes_nothing(tmp_path: Path) -> None:
    process, _, _ = _serve_until_listening(tmp_path, "--no-autopair", "--db", str(tmp_path / "m.db"))
    process.terminate()
    process.wait(15)
    assert not (tmp_path / ".config").exists()


def test_sigterm_exits_cleanly(start_door: Callable[..., DoorProcess]) -> None:
    door = start_door()
    assert door.stop() == 0


def test_pair_prints_only_the_token_and_validates(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    done = run_door("pair", "--person", "sam", "--team", "acme", "--admin", "--db", db, home=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("bli_") and done.stdout.count("\n") == 1
    assert "shown once" in done.stderr and done.stdout.strip() not in done.stderr
    listing = run_door("tokens", "list", "--db", db, home=tmp_path)
    assert "acme/sam admin" in listing.stdout and "active" in listing.stdout
    blank = run_door("pair", "--person", "  ", "--db", db, home=tmp_path)
    assert blank.returncode == 2 and "non-empty printable text on one line" in blank.stderr
    missing = run_door("pair", "--db", db, home=tmp_path)
    assert missing.returncode == 2 and "--person" in missing.stderr


def test_start_up_errors_are_one_line(tmp_path: Path) -> None:
    postgres = run_door("serve", "--db", "postgresql://localhost/x", "--embedder", "none", home=tmp_path)
    assert postgres.returncode == 2 and "PostgreSQL" in postgres.stderr
    assert "Traceback" not in postgres.stderr
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    broken = run_door("serve", "--db", str(garbage), "--embedder", "none", "--no-autopair", home=tmp_path)
    assert broken.returncode == 1 and "cannot open" in broken.stderr and "Traceback" not in broken.stderr
    assert garbage.read_bytes() == b"this is not a database" * 100
    newer = tmp_path / "newer.db"
    connection = sqlite3.connect(newer)
    connection.execute("PRAGMA user_version = 99")
    connection.close()
    too_new = run_door("serve", "--db", str(newer), "--embedder", "none", "--no-autopair", home=tmp_path)
    assert too_new.returncode == 1 and "newer than this door" in too_new.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        busy = run_door(
            "serve",
            "--port",
            port,
            "--db",
            str(tmp_path / "ok.db"),
            "--embedder",
            "none",
            "--no-autopair",
            home=tmp_path,
        )
    assert busy.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in busy.stderr


def test_schema_version_is_recorded(door: DoorProcess) -> None:
    from bli_memory.door.store.sqlite import SCHEMA_VERSION

    version = sqlite3.connect(door.db).execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION
    journal = sqlite3.connect(door.db).execute("PRAGMA journal_mode").fetchone()[0]
    assert journal == "wal"


def test_help_is_helpful(tmp_path: Path) -> None:
    done = run_door("--help", home=tmp_path)
    assert done.returncode == 0
    for word in ("serve", "pair", "tokens"):
        assert word in done.stdout
    serve_help = run_door("serve", "--help", home=tmp_path)
    assert "--no-autopair" in serve_help.stdout and "--embedder" in serve_help.stdout


def test_the_listening_socket_says_tcp_so_answers_are_not_held_by_nagle() -> None:
    """asyncio sets TCP_NODELAY on accepted sockets only when the listener's proto is TCP; without it
    every answer waited for the client's delayed ACK (measured: 44 ms per /healthz, 2 ms with it)."""
    from bli_memory.door.cli import _bind

    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


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
