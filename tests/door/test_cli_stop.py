"""`bli-memory-door stop` stops the door of one database, by its pid file, and no other process:
not another data folder's door, not a process that merely holds a stale pid. Real doors."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.helpers import BIN, LISTENING, DoorProcess

DOOR = str(BIN / "bli-memory-door")


def _door_cli(door: DoorProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DOOR, *args], capture_output=True, text=True, env=door.env(), timeout=60)


def test_stop_ends_this_folders_door_and_leaves_another_running(
    start_door: Callable[..., DoorProcess],
) -> None:
    first = start_door(folder="first")
    second = start_door(folder="second")
    assert first.process is not None and second.process is not None
    pid_file = Path(f"{first.db}.pid")
    assert json.loads(pid_file.read_text()) == {
        "pid": first.process.pid,
        "url": first.url,
        "db": str(first.db),
    }
    done = _door_cli(first, "stop", "--db", str(first.db))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"stopped door (pid {first.process.pid}) on {first.url}\n"
    assert first.process.wait(5) == 0  # a clean exit: stop waited for it
    assert not pid_file.exists()
    status, health = second.get("/healthz", token="")
    assert status == 200 and health["ok"] is True


def test_stop_without_a_door_is_exit_1_and_a_killed_doors_file_is_taken_over(
    start_door: Callable[..., DoorProcess], tmp_path: Path
) -> None:
    door = start_door()
    door.kill()  # SIGKILL: the pid file stays, its lock goes with the process
    assert Path(f"{door.db}.pid").exists()
    stale = _door_cli(door, "stop", "--db", str(door.db))
    assert stale.returncode == 1 and stale.stdout == ""
    assert stale.stderr.startswith(f"bli-memory-door: no door runs for this data folder ({door.db}")
    none = _door_cli(door, "stop", "--db", str(tmp_path / "elsewhere" / "memory.db"))
    assert none.returncode == 1 and "no door runs for this data folder" in none.stderr
    door.start()  # the next door takes the stale file over
    assert door.process is not None
    assert json.loads(Path(f"{door.db}.pid").read_text())["pid"] == door.process.pid
    assert _door_cli(door, "stop", "--db", str(door.db)).returncode == 0


def test_a_second_door_on_the_same_database_is_refused(start_door: Callable[..., DoorProcess]) -> None:
    door = start_door()
    assert door.process is not None
    second = _door_cli(
        door, "serve", "--port", "0", "--db", str(door.db), "--embedder", "none", "--no-autopair"
    )
    assert second.returncode == 1 and second.stderr.count("\n") == 1
    assert f"another door (pid {door.process.pid}, {door.url}) already serves {door.db}" in second.stderr
    status, _ = door.get("/healthz", token="")
    assert status == 200


def test_stop_never_signals_a_process_that_is_not_a_door(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # a pid file whose lock is held, naming a process that is no door (say, a reused pid)
        fd = os.open(f"{db}.pid", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, json.dumps({"pid": bystander.pid, "url": "http://127.0.0.1:1"}).encode())
        env = {**os.environ, "HOME": str(tmp_path)}
        done = subprocess.run(
            [DOOR, "stop", "--db", str(db)], capture_output=True, text=True, env=env, timeout=60
        )
        os.close(fd)
        assert done.returncode == 1
        assert f"names pid {bystander.pid}, which is not a bli-memory door; not stopping it" in done.stderr
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait(10)


def test_help_names_stop(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    top = subprocess.run([DOOR, "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert "stop" in top.stdout and "bli-memory-door stop" in top.stdout
    stop = subprocess.run([DOOR, "stop", "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert "pid file" in stop.stdout and "Exit 0 when it stopped; 1 when no door" in " ".join(
        stop.stdout.split()
    )


def test_a_sigterm_right_after_start_is_never_lost(tmp_path: Path) -> None:
    """A SIGTERM that landed while uvicorn was starting used to be swallowed (SystemExit raised in a
    callback whose exceptions Python ignores) and the door ran on; seen about once in six starts."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "share")}
    command = [DOOR, "serve", "--port", "0", "--embedder", "none", "--no-autopair", "--no-worker"]
    for attempt in range(6):
        process = subprocess.Popen(
            [*command, "--db", str(tmp_path / "memory.db")], stderr=subprocess.PIPE, text=True, env=env
        )
        assert process.stderr is not None
        for line in process.stderr:  # ends when the door exits: bounded by its start-up
            if line.startswith(LISTENING):
                break
        process.terminate()
        try:
            assert process.wait(10) == 0, f"attempt {attempt}"
        finally:
            process.kill()
            process.wait(5)
        assert not Path(f"{tmp_path / 'memory.db'}.pid").exists()
