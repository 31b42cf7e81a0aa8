"""`bli-memory-mcp ops [--days 7|30] [--json]`: the A/B's ops view, from the door and from this machine.

Two parts, each saying where it comes from:

- **experience** (the door, `GET /api/ops/memory-usage`): opinions per store and person over the
  rolling window, the last five reasons per store (verbatim, within 30 days), and how the door read
  its rows (requested, returned, unique; capped or failed), since a verdict needs to know when its
  numbers are partial. Self-reported: counts do not establish quality or unbiased sampling.
- **hooks** (this machine's hourly stats files, `bli_memory.hooks.stats`): per hook, runs and their
  outcomes, skip and failure reasons, routes (daemon or direct) and durations. Durations are kept as
  a histogram, so p50 and p95 are the upper edges of the buckets they fall in ("≤ 200 ms"); max is
  exact. Content-free: statuses, closed-set reasons, routes and times only.

Plus the local experience queue: entries not yet shipped, and what the last `sync` did.

`BLI_MEMORY_OPS_NOW` (ISO 8601 or Unix seconds) fixes "now" for the local part. It exists for the
tests, which read stats files written for known hours; nobody else needs it.

Exit status: 0 when the door answered, 1 when it did not (unpaired, unreachable; the local part is
still printed), 2 bad input.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from bli_memory.commands.base import JSON_HELP, new_parser, parse, print_json, usage_error
from bli_memory.errors import EXIT_FAILED, EXIT_OK
from bli_memory.wire.contract import EXPERIENCE_VERDICTS

WINDOWS_DAYS = (7, 30)
DOOR_DEADLINE_S = 10.0
#: fixes "now" for the local part; for tests only (see the module's docstring)
ENV_NOW = "BLI_MEMORY_OPS_NOW"
QUANTILES = (("p50", 0.5), ("p95", 0.95))


def parse_now(text: str) -> float:
    """`BLI_MEMORY_OPS_NOW` as Unix seconds: an ISO 8601 time (Z or an offset) or a number."""
    try:
        return float(text)
    except ValueError:
        pass
    value = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return value.timestamp()


# -- this machine's hook stats ----------------------------------------------------------------------


def _merge(into: dict[str, Any], counts: Mapping[str, Any]) -> None:
    """Add one hour's counts of one hook into the running totals (numbers summed, max kept)."""
    for key, value in counts.items():
        if isinstance(value, Mapping):
            _merge(into.setdefault(key, {}), value)
        elif isinstance(value, int) and not isinstance(value, bool):
            into[key] = max(into.get(key, 0), value) if key == "max" else into.get(key, 0) + value


def quantile_edge(durations: Mapping[str, Any], share: float) -> str | None:
    """The histogram bucket that holds the `share` quantile, as text: `≤ 200 ms` or `> 15000 ms`."""
    from bli_memory.wire.contract import DURATION_EDGES_MS, bucket_name

    buckets = [(bucket_name(edge), f"≤ {edge} ms") for edge in DURATION_EDGES_MS]
    buckets.append((bucket_name(DURATION_EDGES_MS[-1] + 1), f"> {DURATION_EDGES_MS[-1]} ms"))
    total = sum(int(durations.get(name, 0)) for name, _ in buckets)
    if total == 0:
        return None
    seen = 0
    for name, label in buckets:
        seen += int(durations.get(name, 0))
        if seen >= share * total:
            return label
    return buckets[-1][1]


def hook_summary(env: Mapping[str, str], now_s: float, days: int) -> dict[str, Any]:
    """Every hour file of the last `days` days, summed per hook; content-free."""
    from bli_memory.hooks import stats
    from bli_memory.wire import tinyjson
    from bli_memory.wire.contract import HOOK_STATS_SCHEMA

    folder = stats.stats_dir(env)
    oldest = stats.hour_name(now_s - days * 86_400.0)
    newest = stats.hour_name(now_s)
    hooks: dict[str, dict[str, Any]] = {}
    hours = 0
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    for name in names:
        hour = name.removesuffix(".json")
        if not name.endswith(".json") or len(hour) != len(oldest) or not oldest <= hour <= newest:
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                data = tinyjson.loads(handle.read())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("schema") != HOOK_STATS_SCHEMA:
            continue
        hours += 1
        for hook, counts in (data.get("hooks") or {}).items():
            if isinstance(counts, Mapping):
                _merge(hooks.setdefault(str(hook), {}), counts)
    for counts in hooks.values():
        durations = counts.get("elapsed_ms", {})
        runs = counts.get("runs", 0)
        counts["elapsed"] = {
            **{label: quantile_edge(durations, share) for label, share in QUANTILES},
            "max_ms": durations.get("max"),
            "mean_ms": round(durations.get("sum", 0) / runs) if runs else None,
        }
    return {"folder": folder, "hours": hours, "from": oldest + ":00Z", "to": newest + ":00Z", "hooks": hooks}


# -- the local experience queue ---------------------------------------------------------------------


def experience_queue(env: Mapping[str, str]) -> dict[str, Any]:
    from bli_memory.experience_log import outbox_dir, queued_entries, read_last_sync

    return {"queued": len(queued_entries(outbox_dir(env))), "lastSync": read_last_sync(env)}


# -- the door's aggregation -------------------------------------------------------------------------


def door_usage(env: Mapping[str, str]) -> dict[str, Any]:
    """`{reachable: True, ...the door's answer}` or `{reachable: False, reason}`."""
    from bli_memory.settings import load_settings
    from bli_memory.tools import DoorUrlError, door_client_for
    from bli_memory.wire.reasons import to_log_reason

    settings = load_settings(env)
    if not settings.paired:
        return {"reachable": False, "reason": "unpaired"}
    try:
        client = door_client_for(settings)
    except DoorUrlError:
        return {"reachable": False, "reason": "invalid_door_url"}
    try:
        answer = client.memory_usage(deadline=time.monotonic() + DOOR_DEADLINE_S)
    except Exception as exc:
        return {"reachable": False, "reason": to_log_reason(exc)}
    finally:
        client.close()
    return {"reachable": True, **answer}


# -- text -------------------------------------------------------------------------------------------


def _verdicts(counts: Mapping[str, int]) -> str:
    return "  ".join(f"{verdict} {counts.get(verdict, 0)}" for verdict in EXPERIENCE_VERDICTS)


def experience_lines(door: Mapping[str, Any], days: int) -> list[str]:
    if not door.get("reachable"):
        return [f"experience (door): not read ({door.get('reason')})"]
    experience = door.get("experience") or {}
    window = (experience.get("windows") or {}).get(f"{days}d") or {}
    lines = [f"experience (door, last {days} days; self-reported, counts do not establish quality):"]
    if not window:
        lines.append("  no opinions in this window")
    for store in sorted(window):
        people = window[store]
        total: dict[str, int] = {}
        for counts in people.values():
            for verdict, count in counts.items():
                total[verdict] = total.get(verdict, 0) + int(count)
        lines.append(f"  {store:<12} all         {_verdicts(total)}")
        for person in sorted(people):
            lines.append(f"  {'':<12} {person:<11} {_verdicts(people[person])}")
    last = experience.get("lastReasons") or {}
    if last:
        lines.append("  last reasons per store (30 days, newest first):")
        for store in sorted(last):
            for entry in last[store]:
                lines.append(f"    {store}: {entry['verdict']} ({entry['person']}) {entry['reason']}")
    rows = experience.get("rows") or {}
    read = f"requested {rows.get('requested')}, returned {rows.get('returned')}, unique {rows.get('unique')}"
    flags = [name for name in ("capped",) if rows.get(name)]
    if rows.get("failed"):
        flags.append(f"failed: {rows['failed']}")
    lines.append(f"  rows read: {read}" + (f" ({', '.join(flags)})" if flags else ""))
    return lines


def queue_line(queue: Mapping[str, Any]) -> str:
    last = queue.get("lastSync")
    if last is None:
        synced = "never synced"
    else:
        synced = (
            f"last sync {last.get('at')}: shipped {last.get('shipped')}, rejected {last.get('rejected')}, "
            f"left {last.get('queued')}"
        ) + (f" (stopped: {last['stopped']})" if last.get("stopped") else "")
    return f"experience log (this machine): {queue.get('queued')} queued; {synced}"


def hook_lines(summary: Mapping[str, Any], days: int) -> list[str]:
    lines = [f"hooks (this machine, last {days} days, {summary['hours']} hourly files):"]
    hooks = summary["hooks"]
    if not hooks:
        return [*lines, "  no hook runs recorded"]
    header = f"  {'hook':<14}{'runs':>6}{'ok':>6}{'skipped':>9}{'failed':>8}  {'p50':<11}{'p95':<11}{'max':>9}  via"
    lines.append(header)
    for hook in sorted(hooks):
        counts = hooks[hook]
        elapsed = counts["elapsed"]
        via = ", ".join(f"{route} {count}" for route, count in sorted((counts.get("via") or {}).items()))
        max_ms = elapsed.get("max_ms")
        lines.append(
            f"  {hook:<14}{counts.get('runs', 0):>6}{counts.get('ok', 0):>6}{counts.get('skipped', 0):>9}"
            f"{counts.get('failed', 0):>8}  {elapsed.get('p50') or '-':<11}{elapsed.get('p95') or '-':<11}"
            f"{(str(max_ms) + ' ms') if max_ms is not None else '-':>9}  {via}"
        )
    for hook in sorted(hooks):
        reasons = hooks[hook].get("reasons") or {}
        if reasons:
            listed = ", ".join(f"{reason} {count}" for reason, count in sorted(reasons.items()))
            lines.append(f"  {hook} reasons: {listed}")
    return lines


def main(argv: list[str]) -> int:
    parser = new_parser(
        "ops",
        "The A/B's ops view: the door's experience aggregation (opinions per store and person, the\n"
        "last reasons, how the rows were read) and this machine's hook outcomes, skips, durations and\n"
        "routes from its hourly stats files (content-free), plus the local experience queue.",
        "p50/p95 are the upper edges of the duration histogram's buckets; max is exact.\n"
        "exit status: 0 the door answered, 1 it did not (the local part is still shown), 2 bad input",
    )
    parser.add_argument("--days", type=int, default=7, help="the window: 7 or 30 (default 7)")
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    if args.days not in WINDOWS_DAYS:
        raise usage_error(parser.prog, f"--days takes 7 or 30, not {args.days}")
    env = os.environ
    now_text = env.get(ENV_NOW)
    try:
        now_s = parse_now(now_text) if now_text else time.time()
    except ValueError:
        raise usage_error(parser.prog, f"{ENV_NOW} is not an ISO 8601 time or Unix seconds") from None
    door = door_usage(env)
    report = {
        "days": args.days,
        "door": door,
        "experienceLog": experience_queue(env),
        "hooks": hook_summary(env, now_s, args.days),
    }
    if args.json:
        print_json(report)
    else:
        lines = experience_lines(door, args.days)
        lines.append(queue_line(report["experienceLog"]))
        lines += hook_lines(report["hooks"], args.days)
        sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK if door.get("reachable") else EXIT_FAILED
