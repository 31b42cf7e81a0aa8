"""The agent-experience log of the live A/B, without its command line: where receipts and sidecars
live, the check an opinion must pass, recording one (receipt, sidecar, shipping) and the queue `sync`
ships. `bli-memory-mcp log`/`sync` (`bli_memory.commands.experience`) and the MCP tool
`memory_experience` (`bli_memory.tools`) both record through `record_opinion`, so the two cannot
drift. Standard library only (the redactor's `re` is loaded only to check a reason).

`sync` writes what it did to `~/.local/state/bli-cockpit/experience-sync.json` (`write_last_sync`),
which `status` and `ops` read. After the entries it also sends this machine's hourly hook figures of
the last `HOOK_STATS_DAYS` days (`recent_hook_stats`, `ship_hook_stats`), so that the door's ops view
shows them; a re-sent hour replaces the door's copy of it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bli_memory.paths import home_dir, state_dir
from bli_memory.wire.contract import EXPERIENCE_STORES, EXPERIENCE_VERDICTS, MAX_EXPERIENCE_REASON_CHARS

#: the marker each store prints on its recall lines; copy the observed one into the opinion.
MARKERS = {"bli": "[bli]", "supermemory": "◪", "both": "[bli]+◪"}
SYNC_BATCH_MAX = 20
SHIP_DEADLINE_S = 5.0
#: receipts are written in Indochina Time, as the log's readers expect (fixed UTC+7, no DST).
ICT = _dt.timezone(_dt.timedelta(hours=7), "ICT")
#: the days of hourly hook figures `sync` sends (the stats files keep 14)
HOOK_STATS_DAYS = 14
HOOK_STATS_DEADLINE_S = 10.0
#: statuses after which retrying the same entry can never succeed.
PERMANENT_FAILURES = ("http_400", "http_409")


def codex_dir(env: Mapping[str, str]) -> Path:
    return Path(home_dir(env)) / ".codex"


def log_file(env: Mapping[str, str]) -> Path:
    return codex_dir(env) / "AGENT-EXPERIENCE.md"


def outbox_dir(env: Mapping[str, str]) -> Path:
    return codex_dir(env) / "agent-experience-outbox"


def detect_agent(env: Mapping[str, str]) -> str:
    """Which agent is logging, from the environment its host sets; `unknown` when none says."""
    if env.get("CLAUDECODE") or env.get("CLAUDE_PROJECT_DIR"):
        return "claude-code"
    if any(key.startswith("CODEX_") for key in env):
        return "codex"
    return "unknown"


def receipt_line(when: _dt.datetime, agent: str, project: str, store: str, verdict: str, reason: str) -> str:
    stamp = when.astimezone(ICT).strftime("%Y-%m-%d %H:%M")
    return f"- {stamp} ICT · {agent} · {project} · {store} {MARKERS[store]} · {verdict}: {reason}"


def _write_json_atomically(path: Path, data: Mapping[str, Any]) -> None:
    """Write `path` whole or not at all, private (0600) from its first byte: the entries name a
    person's projects and opinions, and the sync summary their door's answers."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        os.chmod(temporary, 0o600)  # an older temporary left at another mode keeps it through O_TRUNC
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def check_reason(reason: str) -> str | None:
    """Why a reason cannot be logged, or None."""
    if not reason:
        return "the reason is empty"
    if "\n" in reason or "\r" in reason:
        return "the reason must be one line"
    if len(reason) > MAX_EXPERIENCE_REASON_CHARS:
        return f"the reason is {len(reason)} characters; at most {MAX_EXPERIENCE_REASON_CHARS}"
    from bli_memory.redact import redact

    if redact(reason).masked:
        return "the reason looks like it holds a secret; write an opinion about the tools only"
    return None


def ship(entry: dict[str, Any], client: Any) -> str | None:
    """POST one entry; None when the door has it (201 or an identical retry's 200), else the reason."""
    from bli_memory.wire.reasons import to_log_reason

    body = {key: entry[key] for key in ("id", "store", "verdict", "reason", "created_at")}
    try:
        client.experience(body, deadline=time.monotonic() + SHIP_DEADLINE_S)
    except Exception as exc:
        return to_log_reason(exc)
    return None


def mark(path: Path, entry: dict[str, Any], failure: str | None) -> None:
    if failure is None:
        entry["shipped"] = True
        entry["shipped_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")
        entry["last_error"] = None
    else:
        entry["last_error"] = failure
        entry["rejected"] = failure in PERMANENT_FAILURES
    _write_json_atomically(path, entry)


def shipping_state(failure: str | None) -> str:
    """What happened to a new entry, in words: shipped, or queued for `sync` and why."""
    if failure is None:
        return "shipped to the door"
    return f"queued ({failure}); `bli-memory-mcp sync` ships it"


class ExperienceWriteError(Exception):
    """The receipt or its sidecar could not be written; the text is one line."""


@dataclass(frozen=True)
class Recorded:
    """One opinion as it was recorded: the local receipt, its sidecar, and what shipping did."""

    id: str
    receipt: str
    receipt_file: Path
    sidecar: Path
    shipped: bool
    #: why it is still queued (a closed-set reason; `unpaired` without a door), or None when shipped
    failure: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "receipt": self.receipt,
            "receiptFile": str(self.receipt_file),
            "sidecar": str(self.sidecar),
            "shipped": self.shipped,
            "reason": self.failure,
        }


def check_opinion(store: object, verdict: object, reason: str) -> str | None:
    """Why this opinion cannot be logged, or None: the one check `log` and `memory_experience` share."""
    if store not in EXPERIENCE_STORES:
        return f"the store must be one of {', '.join(EXPERIENCE_STORES)}"
    if verdict not in EXPERIENCE_VERDICTS:
        return f"the verdict must be one of {', '.join(EXPERIENCE_VERDICTS)}"
    return check_reason(reason)


def record_opinion(
    store: str,
    verdict: str,
    reason: str,
    *,
    env: Mapping[str, str],
    client: Any,
    agent: str | None = None,
    project: str,
    now: _dt.datetime | None = None,
) -> Recorded:
    """Append the receipt, write the sidecar, then try to ship it with `client` (None: leave it queued).

    The caller has checked the opinion (`check_opinion`); `log` and the MCP tool `memory_experience`
    both record through here. The opinion is recorded locally whatever the door does. Raises
    ExperienceWriteError when the receipt cannot be written.
    """
    import uuid

    now = now or _dt.datetime.now(_dt.timezone.utc)
    agent = (agent or detect_agent(env)).strip() or "unknown"
    project = (project or "").strip() or "unknown"
    line = receipt_line(now, agent, project, store, verdict, reason)
    entry: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "store": store,
        "verdict": verdict,
        "reason": reason,
        "created_at": now.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "agent": agent,
        "project": project,
        "receipt": line,
        "shipped": False,
        "shipped_at": None,
        "last_error": None,
    }
    outbox = outbox_dir(env)
    sidecar = outbox / f"{entry['id']}.json"
    try:
        outbox.mkdir(parents=True, exist_ok=True)
        _write_json_atomically(sidecar, entry)
        with open(log_file(env), "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    except OSError as exc:
        raise ExperienceWriteError(f"cannot write the experience log: {exc.strerror}") from None
    failure = "unpaired" if client is None else ship(entry, client)
    if client is not None:
        mark(sidecar, entry, failure)
    return Recorded(entry["id"], line, log_file(env), sidecar, bool(entry["shipped"]), failure)


def queued_entries(outbox: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Unshipped, not rejected entries, oldest first; unreadable sidecars are skipped, never deleted."""
    entries = []
    for path in sorted(outbox.glob("*.json")) if outbox.is_dir() else []:
        with contextlib.suppress(OSError, ValueError, RecursionError):
            entry = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(entry, dict) and not entry.get("shipped") and not entry.get("rejected"):
                entries.append((path, entry))
    entries.sort(key=lambda item: str(item[1].get("created_at", "")))
    return entries


#: what the last `sync` did, for `status` and `ops` (content-free: counts and a reason)
LAST_SYNC_NAME = "experience-sync.json"


def last_sync_file(env: Mapping[str, str]) -> Path:
    return Path(state_dir(env)) / LAST_SYNC_NAME


def write_last_sync(
    env: Mapping[str, str], summary: Mapping[str, Any], now: _dt.datetime | None = None
) -> None:
    """Remember when `sync` last ran and what it did; best effort (a read-only state folder loses it)."""
    when = (now or _dt.datetime.now(_dt.timezone.utc)).replace(microsecond=0)
    data = {"at": when.isoformat().replace("+00:00", "Z"), **summary}
    with contextlib.suppress(OSError):
        path = last_sync_file(env)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_json_atomically(path, data)


def read_last_sync(env: Mapping[str, str]) -> dict[str, Any] | None:
    """What the last `sync` wrote, or None when it never ran (or the file is unreadable)."""
    try:
        data = json.loads(last_sync_file(env).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # unreadable, not JSON, or nested too deep to read
        return None
    return data if isinstance(data, dict) else None


def recent_hook_stats(env: Mapping[str, str], now_s: float) -> list[dict[str, Any]]:
    """This machine's hourly hook stats documents of the last `HOOK_STATS_DAYS` days, oldest first,
    as the files hold them; unreadable or foreign files are skipped."""
    from bli_memory.hooks import stats
    from bli_memory.wire.contract import HOOK_STATS_SCHEMA

    folder = Path(stats.stats_dir(env))
    oldest = stats.hour_name(now_s - HOOK_STATS_DAYS * 86_400.0)
    newest = stats.hour_name(now_s)
    documents = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        hour = path.name.removesuffix(".json")
        if len(hour) != len(oldest) or not oldest < hour <= newest:
            continue
        with contextlib.suppress(OSError, ValueError, RecursionError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if (
                isinstance(data, dict)
                and data.get("schema") == HOOK_STATS_SCHEMA
                and data.get("hour") == hour + ":00Z"
            ):
                documents.append(
                    {"schema": data["schema"], "hour": data["hour"], "hooks": data.get("hooks", {})}
                )
    return documents


def ship_hook_stats(env: Mapping[str, str], client: Any, now_s: float | None = None) -> dict[str, Any]:
    """Send the recent hourly hook figures: `{hours: N}` sent, or `{hours: 0, failed: reason}`."""
    from bli_memory.wire.reasons import to_log_reason

    documents = recent_hook_stats(env, time.time() if now_s is None else now_s)
    if not documents:
        return {"hours": 0, "failed": None}
    try:
        client.hook_stats(documents, deadline=time.monotonic() + HOOK_STATS_DEADLINE_S)
    except Exception as exc:
        return {"hours": 0, "failed": to_log_reason(exc)}
    return {"hours": len(documents), "failed": None}
