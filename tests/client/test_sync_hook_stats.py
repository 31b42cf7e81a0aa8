"""`bli-memory-mcp sync` sends this machine's hourly hook figures to a real door after the experience
entries; a failure to send them is a line of its own and never changes sync's result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bli_memory.hooks import stats

BIN = str(Path(sys.executable).parent / "bli-memory-mcp")
HOUR_S = 3600.0
DAY_S = 86_400.0


def run(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "BLI_MEMORY_DAEMON": "0", "LANG": "C.UTF-8"}
    env.update(extra)
    return subprocess.run([BIN, *args], capture_output=True, text=True, env=env, cwd=str(home), timeout=60)


def paired(url: str, token: str) -> dict[str, str]:
    return {"BLI_MEMORY_DASHBOARD_URL": url, "BLI_MEMORY_DEVICE_TOKEN": token}


def record_hours(home: Path) -> None:
    """Hook runs through the real stats writer: three hours within 14 days, one older."""
    env = {"HOME": str(home)}
    now = time.time()
    runs: list[tuple[float, str, dict[str, object], int]] = [
        (now, "prompt", {"status": "ok", "via": "daemon"}, 40),
        (now - HOUR_S, "prompt", {"status": "ok", "via": "daemon"}, 150),
        (now - HOUR_S, "prompt", {"status": "skipped", "reason": "trivial_prompt", "via": "direct"}, 5),
        (now - 3 * DAY_S, "session-start", {"status": "failed", "reason": "timeout", "via": "direct"}, 9000),
        (now - 20 * DAY_S, "stop", {"status": "ok", "via": "direct"}, 900),  # older than 14 days
    ]
    for when, hook, outcome, elapsed_ms in runs:
        assert stats.record(hook, outcome, elapsed_ms, env=env, now_s=when)


def test_sync_sends_the_recent_hours_and_a_resend_changes_nothing(
    tmp_path: Path, start_door: Callable[..., Any]
) -> None:
    door = start_door()
    home = tmp_path / "home"
    home.mkdir()
    record_hours(home)
    first = run(home, "sync", **paired(door.url, door.token))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["shipped 0, rejected 0, still queued 0", "hook stats: sent 3 hours"]
    again = run(home, "sync", "--json", **paired(door.url, door.token))
    assert json.loads(again.stdout)["hookStats"] == {"hours": 3, "failed": None}
    status, summary = door.get("/api/ops/hook-stats?days=30", token=door.token)
    assert status == 200 and summary["devices"] == 1 and summary["hours"] == 3
    prompt, start = summary["hooks"]["prompt"], summary["hooks"]["session-start"]
    assert (prompt["runs"], prompt["ok"], prompt["skipped"], prompt["skippedTrivial"]) == (3, 2, 1, 1)
    assert prompt["via"] == {"daemon": 2, "direct": 1} and prompt["elapsedMs"]["max"] == 150
    assert (start["runs"], start["failed"], start["reasons"]) == (1, 1, {"timeout": 1})
    assert "stop" not in summary["hooks"]
    last = json.loads(run(home, "status", "--json", **paired(door.url, door.token)).stdout)
    assert last["experience"]["lastSync"]["hookStats"] == {"hours": 3, "failed": None}


def test_a_failure_to_send_the_hours_never_fails_the_experience_result(
    tmp_path: Path, start_door: Callable[..., Any]
) -> None:
    door = start_door()
    home = tmp_path / "home"
    home.mkdir()
    record_hours(home)
    down = run(home, "sync", **paired("http://127.0.0.1:9", door.token))  # nothing queued, door closed
    assert down.returncode == 0, down.stderr
    assert down.stdout.splitlines()[-1] == "hook stats: not sent (dashboard_unreachable)"
    logged = run(
        home, "log", "win", "--store", "bli", "It recalled the decision", **paired("http://127.0.0.1:9", "x")
    )
    assert logged.returncode == 0
    # an hour the door refuses (a counter it does not know) fails the whole send with 400
    hour = stats.hour_name(time.time())
    path = Path(stats.stats_dir({"HOME": str(home)})) / f"{hour}.json"
    broken = json.loads(path.read_text())
    broken["hooks"]["prompt"]["prompt_text"] = 1
    path.write_text(json.dumps(broken))
    synced = run(home, "sync", "--json", **paired(door.url, door.token))
    assert synced.returncode == 0, synced.stderr
    answer = json.loads(synced.stdout)
    assert (answer["shipped"], answer["queued"], answer["stopped"]) == (1, 0, None)
    assert answer["hookStats"] == {"hours": 0, "failed": "http_400"}
