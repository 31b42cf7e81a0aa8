"""The devices' hook figures at the door: checking one device's hourly stats documents as its stats
files hold them (`bli_memory.hooks.stats`), and summing a team's hours per hook for the ops view.

A document is `{"schema": "bli-memory-hook-stats.v1", "hour": "2026-09-06T14:00Z", "hooks": {...}}`.
Everything in it is checked strictly: the hook names, the counter keys, the outcome reasons (the
hooks' closed set, `bli_memory.wire.reasons`), the routes, the duration buckets
(`DURATION_EDGES_MS`), integer counts within bounds, an hour that is not in the future. Anything
else is an `InvalidRequest` naming what was wrong, so that no text but counts is ever stored.

Durations are a histogram: p50 and p95 are the upper edges of the buckets they fall in (a bucket
past the last edge is `gt_15000`); max is exact. Content-free: statuses, reasons, routes, times.

A door keeps RETENTION_DAYS of hours, the longest window the ops view shows; its worker deletes older
ones (`oldest_kept_hour`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bli_memory.door.errors import InvalidRequest
from bli_memory.wire.contract import (
    DURATION_EDGES_MS,
    HOOK_EVENTS,
    HOOK_OUTCOMES,
    HOOK_ROUTES,
    HOOK_STATS_SCHEMA,
    HOUR_FORMAT,
    bucket_name,
)
from bli_memory.wire.reasons import UNKNOWN_INTERNAL_PREFIX, is_known_reason

# The vocabulary (schema, hooks, outcomes, routes, duration buckets) is the client's stats files',
# shared through `bli_memory.wire.contract`.
COUNT_KEYS = ("runs", *HOOK_OUTCOMES, "skipped_trivial")
BUCKETS = (*(bucket_name(edge) for edge in DURATION_EDGES_MS), bucket_name(DURATION_EDGES_MS[-1] + 1))
#: hours one request may carry: the 14 days a client keeps
MAX_HOURS_PER_REQUEST = 14 * 24
#: the most runs one hook may count in one hour, and the most milliseconds their durations may sum to
MAX_RUNS_PER_HOUR = 1_000_000
MAX_ELAPSED_SUM_MS = MAX_RUNS_PER_HOUR * 3_600_000
MAX_REASON_NAMES = 64
#: how far ahead of the door's clock an hour may be (a client's clock a little fast)
FUTURE_SLACK_S = 3600.0
#: the ops view's windows: the last 7 or 30 days
WINDOWS_DAYS = (7, 30)
#: a door keeps the hours of its longest window; older hours are deleted (`oldest_kept_hour`).
RETENTION_DAYS = max(WINDOWS_DAYS)
#: rows deleted per transaction by the retention sweep.
PRUNE_BATCH_ROWS = 1000
SECONDS_PER_DAY = 86_400.0
QUANTILES = (("p50", 0.5), ("p95", 0.95))
_REASON_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")


def hour_name(epoch_s: float) -> str:
    """The hour as the stats files name it: `YYYY-MM-DDTHH` in UTC."""
    return time.strftime(HOUR_FORMAT, time.gmtime(epoch_s))


def oldest_kept_hour(now: float) -> str:
    """The first hour the door keeps: the first the 30-day view shows (`hour_name` of now less
    RETENTION_DAYS). The door's worker deletes the hours before it at its start, then hourly, a batch
    of PRUNE_BATCH_ROWS per transaction, as it tombstones old stored exchanges."""
    return hour_name(now - RETENTION_DAYS * SECONDS_PER_DAY)


def _count(where: str, value: object, most: int = MAX_RUNS_PER_HOUR) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise InvalidRequest(f"{where} must be an integer from 0 to {most}")
    return value


def _known_reason(reason: str) -> bool:
    if is_known_reason(reason):
        return True
    name = reason.removeprefix(UNKNOWN_INTERNAL_PREFIX)
    return name != reason and 0 < len(name) <= 64 and set(name) <= _REASON_CHARS


def _check_hook(where: str, row: object) -> dict[str, Any]:
    if not isinstance(row, Mapping):
        raise InvalidRequest(f"{where} must be an object")
    checked: dict[str, Any] = {}
    for key, value in row.items():
        if key in COUNT_KEYS:
            checked[key] = _count(f"{where}.{key}", value)
        elif key == "via":
            if not isinstance(value, Mapping) or not set(value) <= set(HOOK_ROUTES):
                raise InvalidRequest(f"{where}.via must count only the routes {', '.join(HOOK_ROUTES)}")
            checked["via"] = {route: _count(f"{where}.via.{route}", n) for route, n in value.items()}
        elif key == "reasons":
            if not isinstance(value, Mapping) or len(value) > MAX_REASON_NAMES:
                raise InvalidRequest(
                    f"{where}.reasons must be an object of at most {MAX_REASON_NAMES} reasons"
                )
            for reason in value:
                if not isinstance(reason, str) or not _known_reason(reason):
                    raise InvalidRequest(f"{where}.reasons: {str(reason)[:40]!r} is not a known reason")
            checked["reasons"] = {
                reason: _count(f"{where}.reasons.{reason}", n) for reason, n in value.items()
            }
        elif key == "elapsed_ms":
            if not isinstance(value, Mapping):
                raise InvalidRequest(f"{where}.elapsed_ms must be an object")
            durations: dict[str, int] = {}
            for name, n in value.items():
                if name in BUCKETS:
                    durations[name] = _count(f"{where}.elapsed_ms.{name}", n)
                elif name in ("sum", "max"):
                    durations[name] = _count(f"{where}.elapsed_ms.{name}", n, MAX_ELAPSED_SUM_MS)
                else:
                    raise InvalidRequest(f"{where}.elapsed_ms: {str(name)[:40]!r} is not a duration bucket")
            checked["elapsed_ms"] = durations
        else:
            raise InvalidRequest(f"{where}: {str(key)[:40]!r} is not a hook counter")
    return checked


def _check_hour(where: str, text: object, now: float) -> str:
    if not isinstance(text, str) or len(text) != len("2026-09-06T14:00Z") or not text.endswith(":00Z"):
        raise InvalidRequest(f"{where} must be an hour like 2026-09-06T14:00Z")
    hour = text[: -len(":00Z")]
    try:
        parsed = time.strptime(hour, "%Y-%m-%dT%H")
    except ValueError:
        raise InvalidRequest(f"{where} must be an hour like 2026-09-06T14:00Z") from None
    import calendar

    if hour_name(calendar.timegm(parsed)) != hour:
        raise InvalidRequest(f"{where} must be an hour like 2026-09-06T14:00Z")
    if calendar.timegm(parsed) > now + FUTURE_SLACK_S:
        raise InvalidRequest(f"{where} is in the future")
    return hour


def check_hours(documents: object, now: float) -> list[tuple[str, str]]:
    """One device's hourly documents as `(hour, counts JSON text)` pairs; InvalidRequest otherwise."""
    if not isinstance(documents, list) or not 1 <= len(documents) <= MAX_HOURS_PER_REQUEST:
        raise InvalidRequest(f"hours must be a list of 1 to {MAX_HOURS_PER_REQUEST} hourly documents")
    seen: set[str] = set()
    checked: list[tuple[str, str]] = []
    for index, document in enumerate(documents):
        where = f"hours[{index}]"
        if not isinstance(document, Mapping) or set(document) != {"schema", "hour", "hooks"}:
            raise InvalidRequest(f"{where} must be an object of schema, hour and hooks")
        if document["schema"] != HOOK_STATS_SCHEMA:
            raise InvalidRequest(f"{where}.schema must be {HOOK_STATS_SCHEMA}")
        hour = _check_hour(f"{where}.hour", document["hour"], now)
        if hour in seen:
            raise InvalidRequest(f"{where}.hour {hour}:00Z is sent twice")
        seen.add(hour)
        hooks = document["hooks"]
        if not isinstance(hooks, Mapping):
            raise InvalidRequest(f"{where}.hooks must be an object")
        counts: dict[str, Any] = {}
        for hook, row in hooks.items():
            if hook not in HOOK_EVENTS:
                raise InvalidRequest(
                    f"{where}.hooks: {str(hook)[:40]!r} is not a hook ({', '.join(HOOK_EVENTS)})"
                )
            counts[hook] = _check_hook(f"{where}.hooks.{hook}", row)
        checked.append((hour, json.dumps(counts, sort_keys=True, separators=(",", ":"))))
    return checked


def _merge(into: dict[str, Any], counts: Mapping[str, Any]) -> None:
    """Add one hour's counts of one hook into the running totals (numbers summed, max kept)."""
    for key, value in counts.items():
        if isinstance(value, Mapping):
            _merge(into.setdefault(key, {}), value)
        elif isinstance(value, int):
            into[key] = max(into.get(key, 0), value) if key == "max" else into.get(key, 0) + value


def quantile_bucket(durations: Mapping[str, int], share: float) -> str | None:
    """The histogram bucket holding the `share` quantile (`le_200`, `gt_15000`); None without runs."""
    total = sum(durations.get(name, 0) for name in BUCKETS)
    if total == 0:
        return None
    seen = 0
    for name in BUCKETS:
        seen += durations.get(name, 0)
        if seen >= share * total:
            return name
    return BUCKETS[-1]


def summarise(rows: Sequence[tuple[str, str, str]], days: int, now: float) -> dict[str, Any]:
    """The team's hours (`Store.hook_stats_since`'s rows) summed per hook for the ops view."""
    hooks: dict[str, dict[str, Any]] = {}
    devices: set[str] = set()
    for device_id, _, text in rows:
        devices.add(device_id)
        for hook, counts in json.loads(text).items():
            _merge(hooks.setdefault(hook, {}), counts)
    answer: dict[str, Any] = {}
    for hook in sorted(hooks):
        counts = hooks[hook]
        durations = counts.get("elapsed_ms", {})
        runs = counts.get("runs", 0)
        elapsed: dict[str, Any] = {"max": durations.get("max"), "mean": None}
        if runs:
            elapsed["mean"] = round(durations.get("sum", 0) / runs)
        for label, share in QUANTILES:
            bucket = quantile_bucket(durations, share)
            elapsed[label] = bucket
            elapsed[label + "Edge"] = None if bucket is None else int(bucket.split("_")[1])
        answer[hook] = {
            "runs": runs,
            **{outcome: counts.get(outcome, 0) for outcome in HOOK_OUTCOMES},
            "skippedTrivial": counts.get("skipped_trivial", 0),
            "via": {route: counts.get("via", {}).get(route, 0) for route in HOOK_ROUTES},
            "reasons": dict(sorted(counts.get("reasons", {}).items())),
            "elapsedMs": elapsed,
            "buckets": {name: durations.get(name, 0) for name in BUCKETS},
        }
    return {
        "days": days,
        "from": hour_name(now - days * 86_400.0) + ":00Z",
        "to": hour_name(now) + ":00Z",
        "hours": len({hour for _, hour, _ in rows}),
        "devices": len(devices),
        "hooks": answer,
        "note": "hook figures the devices sent (content-free); p50/p95 are duration bucket edges",
    }
