"""The experience sync's hourly tick, started by the session-start hook after its answer.

The hooks run as the host runs them (subprocesses, a JSON payload on stdin, a temporary HOME); the
entries are queued by the real `bli-memory-mcp log`. A slow door is a loopback stand-in (the real
door cannot be made slow on demand); the shipping itself is also checked against the real door.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from bli_memory.settings import write_session
from tests.helpers import served_locally
from tests.hooks.helpers import BIN, SESSION_START, hook_env, imports_without_site, run_hook

#: how long the stand-in door takes to answer an experience POST: far longer than a session-start hook
SLOW_DOOR_S = 3.0
#: every wait for the detached sync is bounded by this
SYNC_WAIT_S = 20.0
STAMP = Path(".local/state/bli-cockpit/experience-sync.stamp")
FORBIDDEN = ("subprocess", "asyncio", "argparse", "logging", "urllib.request", "http.client", "email", "uuid")


class SlowDoor:
    """What a stand-in door saw: each experience POST's arrival and answer times (monotonic)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.arrived: list[float] = []
        self.answered: list[float] = []
        self.lock = threading.Lock()


@contextmanager
def slow_door(delay_s: float = SLOW_DOOR_S) -> Iterator[tuple[str, SlowDoor]]:
    seen = SlowDoor(delay_s)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer(503, {"error": "unavailable", "message": "stand-in"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if self.path != "/api/memory/experience":
                self._answer(503, {"error": "unavailable", "message": "stand-in"})
                return
            with seen.lock:
                seen.arrived.append(time.monotonic())
            time.sleep(seen.delay_s)
            self._answer(201, {"id": body.get("id"), "status": "inserted"})
            with seen.lock:
                seen.answered.append(time.monotonic())

    with served_locally(Handler) as url:
        yield url, seen


def queue_entry(home: Path, reason: str) -> dict[str, Any]:
    """An opinion the real `log` recorded but could not ship (the door it was given is closed)."""
    env = {
        **hook_env(home),
        "BLI_MEMORY_DASHBOARD_URL": "http://127.0.0.1:9",
        "BLI_MEMORY_DEVICE_TOKEN": "bli_unused",
    }
    done = subprocess.run(
        [BIN, "log", "win", "--store", "bli", reason, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(home),
        timeout=60,
        check=True,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    assert answer["shipped"] is False
    return answer


def sidecar(home: Path, entry_id: str) -> dict[str, Any]:
    path = home / ".codex" / "agent-experience-outbox" / f"{entry_id}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def wait_shipped(home: Path, entry_id: str) -> None:
    deadline = time.monotonic() + SYNC_WAIT_S
    while not sidecar(home, entry_id)["shipped"]:
        assert time.monotonic() < deadline, "the background sync did not ship the entry"
        time.sleep(0.05)


def test_the_sync_runs_detached_after_the_answer_and_at_most_once_an_hour(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first = queue_entry(home, "The dated decision answered the question")
    with slow_door() as (url, seen):
        write_session(url, "bli_standin", env={"HOME": str(home)})
        run = run_hook("session-start", SESSION_START, home)
        exited = time.monotonic()
        assert run.returncode == 0
        assert run.elapsed_s < SLOW_DOOR_S  # the hook did not wait for the sync it started
        wait_shipped(home, first["id"])
        assert len(seen.arrived) == 1 and seen.answered[0] > exited  # shipped after the hook had exited
        stamp = home / STAMP
        stamped = stamp.stat().st_mtime

        # within the hour: a new entry waits, however many sessions start
        second = queue_entry(home, "Recall missed the migration")
        for _ in range(2):
            assert run_hook("session-start", SESSION_START, home).returncode == 0
        time.sleep(1.0)  # long enough for a spawned sync to have posted, had one been spawned
        assert len(seen.arrived) == 1 and sidecar(home, second["id"])["shipped"] is False
        assert stamp.stat().st_mtime == stamped

        # an hour later, the next session start ships it
        os.utime(stamp, (stamped - 3601, stamped - 3601))
        assert run_hook("session-start", SESSION_START, home).returncode == 0
        wait_shipped(home, second["id"])
        assert len(seen.arrived) == 2
    last = json.loads((home / ".local/state/bli-cockpit/experience-sync.json").read_text())
    assert last["shipped"] == 1 and last["queued"] == 0 and last["stopped"] is None


def test_sessions_starting_at_once_sync_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    entry = queue_entry(home, "Both recalls agreed")
    with slow_door(delay_s=1.5) as (url, seen):
        write_session(url, "bli_standin", env={"HOME": str(home)})
        hooks = [
            subprocess.Popen(
                [BIN, "hook", "session-start"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=hook_env(home),
                cwd=str(home),
            )
            for _ in range(4)
        ]
        for process in hooks:
            process.communicate(json.dumps(SESSION_START).encode(), timeout=40)
            assert process.returncode == 0
        wait_shipped(home, entry["id"])
        time.sleep(1.0)  # a second sync would have read the entry as queued and posted it by now
        assert len(seen.arrived) == 1
    assert not (home / ".local/state/bli-cockpit/experience-sync.claim").exists()


def test_the_tick_ships_to_the_real_door(tmp_path: Path, door: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    reason = f"The profile named the right port {time.time_ns()}"
    entry = queue_entry(home, reason)
    write_session(door.url, door.token, env={"HOME": str(home)})
    assert run_hook("session-start", SESSION_START, home).returncode == 0
    wait_shipped(home, entry["id"])
    status, usage = door.get("/api/ops/memory-usage")
    assert status == 200 and reason in json.dumps(usage)


def test_nothing_starts_unpaired_switched_off_or_with_nothing_queued(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert run_hook("session-start", SESSION_START, home).returncode == 0  # nothing queued
    queue_entry(home, "Recall was noise today")
    assert run_hook("session-start", SESSION_START, home).returncode == 0  # unpaired
    with slow_door() as (url, seen):
        write_session(url, "bli_standin", env={"HOME": str(home)})
        env = hook_env(home, BLI_MEMORY_SYNC_TICK="0")
        assert run_hook("session-start", SESSION_START, home, env=env).returncode == 0
        time.sleep(0.5)
        assert seen.arrived == []
    assert not (home / STAMP).exists()


def test_the_tick_imports_nothing_the_hook_path_forbids(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    entry = queue_entry(home, "Recall answered before I asked")
    with slow_door(delay_s=0.0) as (url, _):
        write_session(url, "bli_standin", env={"HOME": str(home)})
        modules, _, _ = imports_without_site("session-start", SESSION_START, hook_env(home))
        assert "bli_memory.hooks.sync_tick" in modules  # the tick ran in this hook
        assert sorted(m for m in modules if m.split(".")[0] in FORBIDDEN or m in FORBIDDEN) == []
        wait_shipped(home, entry["id"])


def test_new_hook_figures_alone_start_the_sync_that_sends_them(tmp_path: Path, door: Any) -> None:
    """A paired machine with no opinion queued still sends its hourly hook figures once an hour:
    the session-start hook records its own run, and the tick finds that file newer than the last
    sync. The door then holds this machine's figures."""
    home = tmp_path / "home"
    home.mkdir()
    token = door.pair(f"tick-stats-{tmp_path.name}")
    write_session(door.url, token, env={"HOME": str(home)})
    assert run_hook("session-start", SESSION_START, home).returncode == 0
    deadline = time.monotonic() + SYNC_WAIT_S
    while True:
        status, body = door.get("/api/ops/hook-stats?days=7", token)
        assert status == 200, body
        if "session-start" in json.dumps(body):
            break
        assert time.monotonic() < deadline, f"the tick did not send the hook figures: {body}"
        time.sleep(0.1)
    assert (home / STAMP).exists()
