"""The hooks' hourly stats (`hooks/stats.py`): what is counted, under concurrent writers, pruned, and a
corrupt file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from bli_memory.hooks import stats


def test_stats_count_outcomes_routes_durations_and_trivial_skips(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    now_s = 1_800_000_000.0
    assert stats.record(
        "prompt", {"status": "skipped", "reason": "trivial_prompt", "via": "direct"}, 3, env=env, now_s=now_s
    )
    assert stats.record("prompt", {"status": "ok", "hits": 2, "via": "daemon"}, 140, env=env, now_s=now_s)
    assert stats.record(
        "prompt", {"status": "failed", "reason": "timeout", "via": "direct"}, 2010, env=env, now_s=now_s
    )
    data = stats.read_hour(env, now_s)
    row = data["hooks"]["prompt"]  # type: ignore[index]
    assert row["runs"] == 3 and row["ok"] == 1 and row["skipped"] == 1 and row["failed"] == 1
    assert row["skipped_trivial"] == 1
    assert row["reasons"] == {"trivial_prompt": 1, "timeout": 1}
    assert row["via"] == {"direct": 2, "daemon": 1}
    assert row["elapsed_ms"] == {"sum": 2153, "max": 2010, "le_50": 1, "le_200": 1, "le_5000": 1}
    files = os.listdir(stats.stats_dir(env))
    assert stats.hour_name(now_s) + ".json" in files
    assert not [name for name in files if name.endswith(".tmp")]


def test_stats_never_lose_a_count_under_concurrent_writers(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    now_s = 1_800_000_000.0
    results: list[bool] = []

    def hammer() -> None:
        for _ in range(25):
            results.append(stats.record("stop", {"status": "ok", "via": "direct"}, 10, env=env, now_s=now_s))

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counted = sum(results)
    assert counted >= 90  # a count may be dropped only when the lock stays busy past its budget
    assert stats.read_hour(env, now_s)["hooks"]["stop"]["runs"] == counted  # type: ignore[index]


def test_stats_prune_files_older_than_the_keep_window(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    folder = Path(stats.stats_dir(env))
    folder.mkdir(parents=True)
    now_s = 1_800_000_000.0
    old = stats.hour_name(now_s - (stats.KEEP_DAYS + 1) * 86400) + ".json"
    recent = stats.hour_name(now_s - 86400) + ".json"
    (folder / old).write_text("{}")
    (folder / recent).write_text("{}")
    stats.record("prompt", {"status": "ok"}, 1, env=env, now_s=now_s)
    assert not (folder / old).exists() and (folder / recent).exists()


def test_a_corrupt_stats_file_starts_the_hour_afresh(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    now_s = 1_800_000_000.0
    folder = Path(stats.stats_dir(env))
    folder.mkdir(parents=True)
    (folder / (stats.hour_name(now_s) + ".json")).write_text("{not json")
    assert stats.record("prompt", {"status": "ok"}, 1, env=env, now_s=now_s)
    assert stats.read_hour(env, now_s)["hooks"]["prompt"]["runs"] == 1  # type: ignore[index]
