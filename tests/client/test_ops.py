"""`bli-memory-mcp ops` and the experience lines of `status`, as subprocesses on a temporary HOME.

The experience comes from a real door (opinions logged by the real `log`, from two people); the hook
part from real stats files, written by `bli_memory.hooks.stats.record` for fixed hours, read with
`BLI_MEMORY_OPS_NOW` fixing "now" (the variable exists for tests).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bli_memory.hooks import stats

BIN = str(Path(sys.executable).parent / "bli-memory-mcp")
NOW = _dt.datetime(2026, 9, 20, 12, 30, tzinfo=_dt.timezone.utc)
HOUR_S = 3600.0
DAY_S = 86_400.0


def run(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "BLI_MEMORY_DAEMON": "0", "LANG": "C.UTF-8"}
    env.update(extra)
    return subprocess.run([BIN, *args], capture_output=True, text=True, env=env, cwd=str(home), timeout=60)


def paired(door: Any, token: str) -> dict[str, str]:
    return {"BLI_MEMORY_DASHBOARD_URL": door.url, "BLI_MEMORY_DEVICE_TOKEN": token}


def record_hours(home: Path) -> None:
    """Hook runs at known times around NOW, through the real stats writer."""
    env = {"HOME": str(home)}
    now = NOW.timestamp()
    runs: list[tuple[float, str, dict[str, object], int]] = [
        (now - HOUR_S, "prompt", {"status": "ok", "via": "daemon"}, 40),
        (now - 2 * HOUR_S, "prompt", {"status": "ok", "via": "direct"}, 150),
        (now - 2 * HOUR_S, "prompt", {"status": "skipped", "reason": "trivial_prompt", "via": "direct"}, 5),
        (now - 3 * DAY_S, "prompt", {"status": "failed", "reason": "timeout", "via": "direct"}, 2003),
        (now - 10 * DAY_S, "session-start", {"status": "ok", "via": "daemon"}, 300),
        (now - 40 * DAY_S, "stop", {"status": "ok", "via": "direct"}, 900),  # outside both windows
        (now + 2 * HOUR_S, "stop", {"status": "ok", "via": "direct"}, 900),  # after "now"
    ]
    for when, hook, outcome, elapsed_ms in runs:
        assert stats.record(hook, outcome, elapsed_ms, env=env, now_s=when)


def test_ops_reads_the_doors_experience_and_this_machines_hours(
    tmp_path: Path, start_door: Callable[..., Any]
) -> None:
    door = start_door()
    alice = door.pair("alice", team="local")
    home = tmp_path / "home"
    home.mkdir()
    for token, verdict, store, reason in (
        (door.token, "win", "bli", "The dated decision answered the question"),
        (alice, "loss", "bli", "Recall missed the migration"),
        (alice, "noise", "supermemory", "Recall repeated the prompt back"),
    ):
        logged = run(home, "log", verdict, "--store", store, reason, **paired(door, token))
        assert logged.returncode == 0, logged.stderr
    record_hours(home)

    as_json = run(home, "ops", "--json", BLI_MEMORY_OPS_NOW=NOW.isoformat(), **paired(door, door.token))
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    usage = report["door"]["experience"]
    assert usage["windows"]["7d"] == {
        "bli": {"tester": {"win": 1}, "alice": {"loss": 1}},
        "supermemory": {"alice": {"noise": 1}},
    }
    assert usage["rows"] == {"requested": 3, "returned": 3, "unique": 3, "capped": False, "failed": None}
    # both logged within one second: the receipts' second is their time, so their order is the door's tie-break
    assert sorted(entry["reason"] for entry in usage["lastReasons"]["bli"]) == [
        "Recall missed the migration",
        "The dated decision answered the question",
    ]
    prompt = report["hooks"]["hooks"]["prompt"]
    assert (prompt["runs"], prompt["ok"], prompt["skipped"], prompt["failed"]) == (4, 2, 1, 1)
    assert prompt["via"] == {"daemon": 1, "direct": 3}
    assert prompt["reasons"] == {"trivial_prompt": 1, "timeout": 1}
    assert prompt["elapsed"] == {"p50": "≤ 50 ms", "p95": "≤ 5000 ms", "max_ms": 2003, "mean_ms": 550}
    assert set(report["hooks"]["hooks"]) == {"prompt"}  # session-start is 10 days old, stop out of range
    assert report["hooks"]["hours"] == 3
    assert report["experienceLog"] == {"queued": 0, "lastSync": None}

    text = run(home, "ops", "--days", "30", BLI_MEMORY_OPS_NOW=NOW.isoformat(), **paired(door, door.token))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == ("experience (door, last 30 days; self-reported, counts do not establish quality):")
    assert "  bli          all         win 1  loss 1  noise 0" in lines
    assert "               alice       win 0  loss 1  noise 0" in lines
    assert "    supermemory: noise (alice) Recall repeated the prompt back" in lines
    assert "  rows read: requested 3, returned 3, unique 3" in lines
    assert "experience log (this machine): 0 queued; never synced" in lines
    assert "hooks (this machine, last 30 days, 4 hourly files):" in lines
    rows = {
        line.split()[0]: line.split()
        for line in lines
        if line.startswith(("  prompt ", "  session-start")) and "reasons:" not in line
    }
    assert rows["prompt"][:5] == ["prompt", "4", "2", "1", "1"] and rows["prompt"][-4:] == [
        "daemon",
        "1,",
        "direct",
        "3",
    ]
    assert rows["session-start"][:5] == ["session-start", "1", "1", "0", "0"]
    assert "  prompt reasons: timeout 1, trivial_prompt 1" in lines
    # content-free: nothing of a prompt, a path or the token reaches the hook part
    assert door.token not in text.stdout and str(home) not in "\n".join(
        lines[lines.index("hooks (this machine, last 30 days, 4 hourly files):") :]
    )


def test_ops_without_a_door_still_shows_this_machine_and_exits_1(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    record_hours(home)
    result = run(home, "ops", BLI_MEMORY_OPS_NOW=str(NOW.timestamp()))
    assert result.returncode == 1
    assert result.stdout.startswith("experience (door): not read (unpaired)\n")
    assert "hooks (this machine, last 7 days, 3 hourly files):" in result.stdout


def test_ops_refuses_other_windows_and_a_bad_clock_in_one_line(tmp_path: Path) -> None:
    for args, extra, needle in (
        (["--days", "14"], {}, "--days takes 7 or 30, not 14"),
        ([], {"BLI_MEMORY_OPS_NOW": "yesterday"}, "BLI_MEMORY_OPS_NOW is not an ISO 8601 time"),
    ):
        result = run(tmp_path, "ops", *args, **extra)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and needle in result.stderr


def test_status_shows_the_last_sync_and_the_queue(tmp_path: Path, start_door: Callable[..., Any]) -> None:
    door = start_door()
    home = tmp_path / "home"
    home.mkdir()
    before = json.loads(run(home, "status", "--json", **paired(door, door.token)).stdout)
    assert before["experience"] == {"queued": 0, "lastSync": None}
    for reason in ("First opinion", "Second opinion"):  # queued: the door given to log is closed
        run(
            home,
            "log",
            "win",
            "--store",
            "bli",
            reason,
            BLI_MEMORY_DASHBOARD_URL="http://127.0.0.1:9",
            BLI_MEMORY_DEVICE_TOKEN="x",
        )
    queued = run(home, "status", **paired(door, door.token))
    assert "sync:    2 experience entries queued; never synced" in queued.stdout
    assert run(home, "sync", **paired(door, door.token)).returncode == 0
    after = json.loads(run(home, "status", "--json", **paired(door, door.token)).stdout)
    last = after["experience"]["lastSync"]
    assert after["experience"]["queued"] == 0
    assert (last["shipped"], last["rejected"], last["queued"], last["stopped"]) == (2, 0, 0, None)
    text = run(home, "status", **paired(door, door.token)).stdout
    assert (
        f"sync:    0 experience entries queued; last sync {last['at']}: shipped 2, rejected 0, left 0" in text
    )
    outbox = home / ".codex/agent-experience-outbox"
    written = [home / ".local/state/bli-cockpit/experience-sync.json", *sorted(outbox.glob("*.json"))]
    assert len(written) == 3 and all(path.stat().st_mode & 0o777 == 0o600 for path in written), [
        oct(path.stat().st_mode) for path in written
    ]


def test_state_files_nested_too_deep_are_skipped_not_a_traceback(tmp_path: Path) -> None:
    """The experience files status, ops and sync read back (the last sync, an outbox entry, an hourly
    hook-stats file) may be anything by the time they are read: one nested past the recursion limit is
    passed over like an unreadable one."""
    deep = "[" * 100_000 + "]" * 100_000
    state = tmp_path / ".local/state/bli-cockpit"
    outbox = tmp_path / ".codex/agent-experience-outbox"
    for path in (state / "experience-sync.json", outbox / "0001.json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(deep)
    hourly = Path(stats.stats_dir({"HOME": str(tmp_path)})) / (stats.hour_name(NOW.timestamp()) + ".json")
    hourly.parent.mkdir(parents=True, exist_ok=True)
    hourly.write_text(deep)
    extra = {"BLI_MEMORY_OPS_NOW": str(NOW.timestamp())}
    for args in (("status", "--json"), ("ops",), ("sync",)):
        done = run(tmp_path, *args, **extra)
        assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, (args, done.stderr)
