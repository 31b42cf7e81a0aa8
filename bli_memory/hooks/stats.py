"""Hourly, content-free counters of hook runs, so a hook that stops searching can never be mistaken
for a hook that broke (a trivial prompt is counted as `skipped_trivial`, apart from the failures;
operators read these files).

One JSON file per UTC hour under `~/.local/state/bli-cockpit/memory-hook-stats/` (beside the daemon
socket), e.g. `2026-09-06T14.json`:

    {"schema": "bli-memory-hook-stats.v1", "hour": "2026-09-06T14:00Z",
     "hooks": {"prompt": {"runs": 3, "ok": 1, "skipped": 1, "failed": 1, "skipped_trivial": 1,
                          "reasons": {"trivial_prompt": 1, "timeout": 1},
                          "via": {"direct": 2, "daemon": 1},
                          "elapsed_ms": {"sum": 2150, "max": 2003, "le_50": 1, ..., "gt_15000": 0}}}}

Only statuses, closed-set reasons, routes and durations are written: no prompt, path or token.
Concurrent hooks (parallel sessions) serialise on an `flock`ed lock file and replace the hour file
atomically; a lock that stays busy past `LOCK_BUDGET_S` drops the count rather than stall a turn.
Files older than `KEEP_DAYS` are pruned when a new hour starts. `--probe` runs never call `record`.
"""

from __future__ import annotations

import fcntl
import os
import time

from bli_memory.paths import state_dir
from bli_memory.wire import tinyjson
from bli_memory.wire.contract import HOOK_STATS_SCHEMA, HOUR_FORMAT, bucket_name

TYPE_CHECKING = False  # typing itself imports `re`; mypy treats this name as typing.TYPE_CHECKING

if TYPE_CHECKING:  # collections.abc would import `collections`: ~3 ms on every hook
    from collections.abc import Mapping

KEEP_DAYS = 14
LOCK_BUDGET_S = 0.1
LOCK_RETRY_S = 0.005
DIR_MODE = 0o700
FILE_MODE = 0o600


def stats_dir(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(state_dir(env), "memory-hook-stats")


def hour_name(epoch_s: float) -> str:
    return time.strftime(HOUR_FORMAT, time.gmtime(epoch_s))


def _bump(counts: dict[str, object], key: str, by: int = 1) -> None:
    value = counts.get(key)
    counts[key] = (value if isinstance(value, int) else 0) + by


def _section(parent: dict[str, object], key: str) -> dict[str, object]:
    child = parent.get(key)
    if not isinstance(child, dict):
        child = {}
        parent[key] = child
    return child


def add_run(data: dict[str, object], hook: str, outcome: Mapping[str, object], elapsed_ms: int) -> None:
    """Count one run into an hour's document (pure; `outcome` is a cleaned receipt outcome)."""
    row = _section(_section(data, "hooks"), hook)
    status = str(outcome.get("status", "failed"))
    _bump(row, "runs")
    _bump(row, status)
    reason = outcome.get("reason")
    if isinstance(reason, str):
        _bump(_section(row, "reasons"), reason)
        if reason == "trivial_prompt":
            _bump(row, "skipped_trivial")
    _bump(_section(row, "via"), str(outcome.get("via", "direct")))
    durations = _section(row, "elapsed_ms")
    _bump(durations, "sum", elapsed_ms)
    previous_max = durations.get("max")
    durations["max"] = max(elapsed_ms, previous_max if isinstance(previous_max, int) else 0)
    _bump(durations, bucket_name(elapsed_ms))


def _read(path: str, hour: str) -> dict[str, object]:
    try:
        with open(path, "rb") as handle:
            data = tinyjson.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        data = None
    if (
        isinstance(data, dict)
        and data.get("schema") == HOOK_STATS_SCHEMA
        and data.get("hour") == hour + ":00Z"
    ):
        return data
    return {"schema": HOOK_STATS_SCHEMA, "hour": hour + ":00Z", "hooks": {}}


def _lock(fd: int) -> bool:
    give_up = time.monotonic() + LOCK_BUDGET_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= give_up:
                return False
            time.sleep(LOCK_RETRY_S)
        except OSError:
            return False


def _prune(folder: str, now_s: float) -> None:
    oldest = hour_name(now_s - KEEP_DAYS * 86400) + ".json"
    try:  # no contextlib: it costs the hook path ~1.4 ms of imports
        for name in os.listdir(folder):
            if name.endswith(".json") and len(name) == len(oldest) and name < oldest:
                os.unlink(os.path.join(folder, name))
    except OSError:
        pass


def record(
    hook: str,
    outcome: Mapping[str, object],
    elapsed_ms: int,
    *,
    env: Mapping[str, str] | None = None,
    now_s: float | None = None,
) -> bool:
    """Count one run in this hour's file; False when it could not be counted (never raises)."""
    now_s = time.time() if now_s is None else now_s
    folder = stats_dir(env)
    hour = hour_name(now_s)
    path = os.path.join(folder, hour + ".json")
    try:
        os.makedirs(folder, mode=DIR_MODE, exist_ok=True)
        lock_fd = os.open(os.path.join(folder, ".lock"), os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError:
        return False
    try:
        if not _lock(lock_fd):
            return False
        is_new_hour = not os.path.exists(path)
        data = _read(path, hour)
        add_run(data, hook, outcome, elapsed_ms)
        temporary = f"{path}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            os.write(fd, tinyjson.dumps(data, compact=True, sort_keys=True).encode())
        finally:
            os.close(fd)
        os.replace(temporary, path)
        if is_new_hour:
            _prune(folder, now_s)
        return True
    except OSError:
        return False
    finally:
        os.close(lock_fd)


def read_hour(env: Mapping[str, str] | None = None, now_s: float | None = None) -> dict[str, object]:
    """This hour's document (empty counts when there is none); for status commands and tests."""
    now_s = time.time() if now_s is None else now_s
    hour = hour_name(now_s)
    return _read(os.path.join(stats_dir(env), hour + ".json"), hour)
