"""`POST /api/ops/hook-stats` and `GET /api/ops/hook-stats`: the devices' hourly hook figures at the door,
checked strictly, kept per device and hour (a re-send replaces the hour), summed per team, and deleted
by the door's worker once older than the ops view's longest window."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable
from contextlib import closing
from typing import Any

import pytest

from bli_memory.door import hook_stats
from bli_memory.hooks import run, stats
from bli_memory.wire import contract
from tests.helpers import DoorProcess


def test_the_door_knows_the_hooks_buckets_and_schema_the_client_writes() -> None:
    assert hook_stats.HOOK_STATS_SCHEMA == stats.HOOK_STATS_SCHEMA
    assert hook_stats.DURATION_EDGES_MS == contract.DURATION_EDGES_MS
    assert hook_stats.HOOK_EVENTS == run.HOOK_EVENTS
    for elapsed_ms in (0, 50, 51, 15000, 15001):
        assert hook_stats.bucket_name(elapsed_ms) == stats.bucket_name(elapsed_ms)


def _hour(hours_ago: int) -> str:
    return stats.hour_name(time.time() - hours_ago * 3600) + ":00Z"


def _document(hours_ago: int, hooks: dict[str, Any]) -> dict[str, Any]:
    return {"schema": contract.HOOK_STATS_SCHEMA, "hour": _hour(hours_ago), "hooks": hooks}


def _prompt_hour(runs: int, fast: int, slow: int) -> dict[str, Any]:
    """`runs` prompt runs: `fast` of them ok within 200 ms through the daemon, the rest skipped as
    trivial prompts (`slow` of all of them took up to 2 s), run directly."""
    data: dict[str, object] = {}
    for index in range(runs):
        outcome: dict[str, object] = (
            {"status": "ok", "via": "daemon"}
            if index < fast
            else {"status": "skipped", "reason": "trivial_prompt", "via": "direct"}
        )
        stats.add_run(data, "prompt", outcome, 1500 if index >= runs - slow else 150)
    hooks = data["hooks"]
    assert isinstance(hooks, dict)
    return hooks


def _team() -> str:
    return f"hooks-{uuid.uuid4().hex[:8]}"


def test_shipped_hours_are_summed_per_hook_and_a_resend_replaces_its_hour(door: DoorProcess) -> None:
    team = _team()
    laptop, desktop = door.pair("ada", team=team), door.pair("bob", team=team)
    hours = [_document(2, _prompt_hour(4, 3, 0)), _document(1, _prompt_hour(2, 2, 1))]
    status, body = door.post("/api/ops/hook-stats", {"hours": hours}, token=laptop)
    assert (status, body) == (200, {"hours": 2})
    status, _ = door.post("/api/ops/hook-stats", {"hours": hours}, token=laptop)  # the same again
    assert status == 200
    session = _document(
        1,
        {
            "session-start": {
                "runs": 1,
                "failed": 1,
                "reasons": {"timeout": 1},
                "via": {"direct": 1},
                "elapsed_ms": {"sum": 9000, "max": 9000, "le_15000": 1},
            }
        },
    )
    status, _ = door.post(
        "/api/ops/hook-stats", {"hours": [_document(1, _prompt_hour(10, 10, 0))]}, token=desktop
    )
    assert status == 200
    status, _ = door.post(
        "/api/ops/hook-stats", {"hours": [session]}, token=desktop
    )  # replaces desktop's hour
    assert status == 200

    status, summary = door.get("/api/ops/hook-stats?days=7", token=laptop)
    assert status == 200
    assert (summary["days"], summary["devices"], summary["hours"]) == (7, 2, 2)
    prompt = summary["hooks"]["prompt"]
    assert (prompt["runs"], prompt["ok"], prompt["skipped"], prompt["failed"]) == (6, 5, 1, 0)
    assert prompt["skippedTrivial"] == 1 and prompt["reasons"] == {"trivial_prompt": 1}
    assert prompt["via"] == {"daemon": 5, "direct": 1}
    assert prompt["elapsedMs"]["p50"] == "le_200" and prompt["elapsedMs"]["p50Edge"] == 200
    assert prompt["elapsedMs"]["p95"] == "le_2000" and prompt["elapsedMs"]["max"] == 1500
    assert prompt["buckets"]["le_200"] == 5 and prompt["buckets"]["le_2000"] == 1
    start = summary["hooks"]["session-start"]
    assert (start["runs"], start["failed"], start["elapsedMs"]["p95Edge"]) == (1, 1, 15000)
    status, month = door.get("/api/ops/hook-stats?days=30", token=desktop)
    assert status == 200 and month["hooks"] == summary["hooks"]


def test_hook_figures_are_the_team_s_own(door: DoorProcess) -> None:
    ours, theirs = door.pair("ada", team=_team()), door.pair("eve", team=_team())
    status, _ = door.post("/api/ops/hook-stats", {"hours": [_document(1, _prompt_hour(3, 3, 0))]}, token=ours)
    assert status == 200
    status, summary = door.get("/api/ops/hook-stats?days=7", token=theirs)
    assert status == 200 and summary["hooks"] == {} and summary["devices"] == 0


def test_hours_older_than_the_window_are_left_out(door: DoorProcess) -> None:
    token = door.pair("ada", team=_team())
    old = _document(10 * 24, _prompt_hour(2, 2, 0))
    status, _ = door.post(
        "/api/ops/hook-stats", {"hours": [old, _document(1, _prompt_hour(1, 1, 0))]}, token=token
    )
    assert status == 200
    assert door.get("/api/ops/hook-stats?days=7", token=token)[1]["hooks"]["prompt"]["runs"] == 1
    assert door.get("/api/ops/hook-stats?days=30", token=token)[1]["hooks"]["prompt"]["runs"] == 3


GOOD = {"runs": 1, "ok": 1, "via": {"daemon": 1}, "elapsed_ms": {"sum": 40, "max": 40, "le_50": 1}}


@pytest.mark.parametrize(
    ("hours", "needle"),
    [
        ([], "1 to 336"),
        ([_document(1, {"prompt": GOOD})] * 2, "sent twice"),
        ([_document(i, {"prompt": GOOD}) for i in range(337)], "1 to 336"),
        ([{**_document(1, {"prompt": GOOD}), "schema": "other"}], "schema"),
        ([{**_document(1, {"prompt": GOOD}), "extra": 1}], "schema, hour and hooks"),
        ([{**_document(1, {"prompt": GOOD}), "hour": "2026-09-06T14"}], "an hour like"),
        ([{**_document(1, {"prompt": GOOD}), "hour": "2026-13-06T14:00Z"}], "an hour like"),
        ([_document(-3, {"prompt": GOOD})], "in the future"),
        ([_document(1, {"compact": GOOD})], "not a hook"),
        ([_document(1, {"prompt": {**GOOD, "prompt_text": 1}})], "not a hook counter"),
        ([_document(1, {"prompt": {**GOOD, "runs": -1}})], "integer from 0"),
        ([_document(1, {"prompt": {**GOOD, "runs": 1.5}})], "integer from 0"),
        ([_document(1, {"prompt": {**GOOD, "runs": True}})], "integer from 0"),
        ([_document(1, {"prompt": {**GOOD, "runs": 10**7}})], "integer from 0"),
        ([_document(1, {"prompt": {**GOOD, "via": {"cloud": 1}}})], "routes"),
        ([_document(1, {"prompt": {**GOOD, "reasons": {"my secret prompt": 1}}})], "not a known reason"),
        ([_document(1, {"prompt": {**GOOD, "elapsed_ms": {"le_300": 1}}})], "not a duration bucket"),
        ([_document(1, "prompt")], "hooks must be an object"),
    ],
)
def test_a_malformed_hour_is_refused_whole_with_400(door: DoorProcess, hours: list[Any], needle: str) -> None:
    token = door.pair("ada", team=_team())
    status, body = door.post("/api/ops/hook-stats", {"hours": hours}, token=token)
    assert status == 400 and body["error"] == "invalid_request" and needle in body["message"]
    assert door.get("/api/ops/hook-stats?days=30", token=token)[1]["hooks"] == {}


def test_known_reasons_are_taken_and_a_window_must_be_7_or_30_days(door: DoorProcess) -> None:
    token = door.pair("ada", team=_team())
    reasons = {"http_503": 1, "unknown_internal:KeyError": 1, "timeout": 1}
    row = {"runs": 3, "failed": 3, "reasons": reasons, "via": {"direct": 3}}
    status, _ = door.post("/api/ops/hook-stats", {"hours": [_document(0, {"stop": row})]}, token=token)
    assert status == 200
    assert door.get("/api/ops/hook-stats?days=7", token=token)[1]["hooks"]["stop"]["reasons"] == dict(
        sorted(reasons.items())
    )
    status, body = door.get("/api/ops/hook-stats?days=14", token=token)
    assert status == 400 and body["error"] == "invalid_request"
    assert door.get("/api/ops/hook-stats?days=7", token="")[0] == 401
    assert door.post("/api/ops/hook-stats", {"hours": []}, token="")[0] == 401


def test_a_door_deletes_the_hours_older_than_its_longest_window(
    start_door: Callable[..., DoorProcess],
) -> None:
    door = start_door("--embedder", "none")
    token = door.pair("ada", team=_team())
    window_h = hook_stats.RETENTION_DAYS * 24
    assert hook_stats.RETENTION_DAYS == max(hook_stats.WINDOWS_DAYS) == 30
    hours = [_document(hours_ago, _prompt_hour(1, 1, 0)) for hours_ago in (window_h + 48, window_h + 2)]
    hours += [_document(hours_ago, _prompt_hour(1, 1, 0)) for hours_ago in (window_h - 2, 1)]
    status, _ = door.post("/api/ops/hook-stats", {"hours": hours}, token=token)
    assert status == 200
    door.stop()
    door.start()  # the worker sweeps at start, then hourly
    door.wait_for_log('[bli-memory] hook stats retention {"deleted": 2, "days": 30}')
    with closing(sqlite3.connect(f"file:{door.db}?mode=ro", uri=True, timeout=30)) as connection:
        kept = sorted(row[0] for row in connection.execute("SELECT hour FROM hook_stats"))
    assert [hour + ":00Z" for hour in kept] == [hours[2]["hour"], hours[3]["hour"]]
    assert door.get("/api/ops/hook-stats?days=30", token=token)[1]["hooks"]["prompt"]["runs"] == 2
