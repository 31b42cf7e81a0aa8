"""`bli-memory-mcp log` and `sync`: the agent-experience log of the live A/B, where agents record
whether this store's recall (or another store's) helped, was wrong, or was noise.

`log win|loss|noise --store bli|supermemory|both REASON` appends one receipt line to the append-only
`~/.codex/AGENT-EXPERIENCE.md`:

    - YYYY-MM-DD HH:MM ICT · <agent> · <project> · <store> <marker> · <verdict>: <reason>

and writes a UUID sidecar to `~/.codex/agent-experience-outbox/<id>.json` with `shipped: false`, then
tries to ship it (`POST /api/memory/experience`). The opinion is recorded locally whatever the door
does; a failed request leaves it queued. `sync` ships queued entries, at most `SYNC_BATCH_MAX` per run,
oldest first, and stops at the first failure; a lost response is retried under the same UUID (the door
answers 200 to an identical retry). A 400 or 409 will never succeed, so such an entry is marked
rejected and skipped from then on instead of blocking the queue.

Reasons are one line of at most 500 characters, opinions about tools only: a reason in which the
redactor finds a secret is refused.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bli_memory.commands.base import JSON_HELP, new_parser, parse, print_json, usage_error
from bli_memory.errors import EXIT_FAILED, EXIT_OK, CliError
from bli_memory.paths import home_dir

VERDICTS = ("win", "loss", "noise")
STORES = ("bli", "supermemory", "both")
#: the marker each store prints on its recall lines; copy the observed one into the opinion.
MARKERS = {"bli": "[bli]", "supermemory": "◪", "both": "[bli]+◪"}
REASON_MAX_CHARS = 500
SYNC_BATCH_MAX = 20
SHIP_DEADLINE_S = 5.0
#: receipts are written in Indochina Time, as the log's readers expect (fixed UTC+7, no DST).
ICT = _dt.timezone(_dt.timedelta(hours=7), "ICT")
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
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def check_reason(reason: str) -> str | None:
    """Why a reason cannot be logged, or None."""
    if not reason:
        return "the reason is empty"
    if "\n" in reason or "\r" in reason:
        return "the reason must be one line"
    if len(reason) > REASON_MAX_CHARS:
        return f"the reason is {len(reason)} characters; at most {REASON_MAX_CHARS}"
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


def _mark(path: Path, entry: dict[str, Any], failure: str | None) -> None:
    if failure is None:
        entry["shipped"] = True
        entry["shipped_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")
        entry["last_error"] = None
    else:
        entry["last_error"] = failure
        entry["rejected"] = failure in PERMANENT_FAILURES
    _write_json_atomically(path, entry)


def _open_client(env: Mapping[str, str]) -> Any:
    """A DoorClient for a paired machine; None when unpaired. A bad door URL raises DoorUrlError."""
    from bli_memory.settings import load_settings
    from bli_memory.tools import door_client_for

    settings = load_settings(env)
    return door_client_for(settings) if settings.paired else None


def log_main(argv: list[str]) -> int:
    parser = new_parser(
        "log",
        "Record an opinion about a memory store's recall in the agent-experience log: a line in\n"
        "~/.codex/AGENT-EXPERIENCE.md plus a queued entry the door receives now or at the next sync.\n"
        "Copy the marker you saw: [bli] is BLI Memory, ◪ is Supermemory; --store both is a joint opinion.",
        "examples:\n"
        '  bli-memory-mcp log win --store bli "The dated decision answered the question directly"\n'
        "  echo 'Recall repeated the prompt back' | bli-memory-mcp log noise --store supermemory --reason-stdin\n\n"
        "reasons: one line, at most 500 characters, opinions about tools only (never prompts, memory\n"
        "bodies or secrets).\n"
        "exit status: 0 recorded (shipped or queued), 2 bad input",
    )
    parser.add_argument("verdict", choices=VERDICTS, help="win, loss or noise")
    parser.add_argument(
        "reason", nargs="*", metavar="REASON", help="why, in one line (several words are joined)"
    )
    parser.add_argument(
        "--store", required=True, choices=STORES, help="which store's recall: bli, supermemory, both"
    )
    parser.add_argument("--reason-stdin", action="store_true", help="read the reason from stdin")
    parser.add_argument("--agent", help="who is logging (default: detected from the host's environment)")
    parser.add_argument("--project", help="the project (default: the current folder's name)")
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    if args.reason_stdin and args.reason:
        raise usage_error(parser.prog, "give REASON or --reason-stdin, not both")
    if args.reason_stdin:
        reason = sys.stdin.read(REASON_MAX_CHARS * 4 + 2).rstrip("\r\n").strip()
    else:
        reason = " ".join(args.reason).strip()
    problem = check_reason(reason)
    if problem is not None:
        raise usage_error(parser.prog, problem)

    import uuid

    from bli_memory.tools import project_dir

    env = os.environ
    now = _dt.datetime.now(_dt.timezone.utc)
    agent = (args.agent or detect_agent(env)).strip() or "unknown"
    project = (args.project or os.path.basename(os.path.abspath(project_dir(env)))).strip() or "unknown"
    line = receipt_line(now, agent, project, args.store, args.verdict, reason)
    entry: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "store": args.store,
        "verdict": args.verdict,
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
    try:
        outbox.mkdir(parents=True, exist_ok=True)
        sidecar = outbox / f"{entry['id']}.json"
        _write_json_atomically(sidecar, entry)
        with open(log_file(env), "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    except OSError as exc:
        raise CliError(
            f"{parser.prog}: cannot write the experience log: {exc.strerror}", EXIT_FAILED
        ) from None

    from bli_memory.tools import DoorUrlError

    try:
        client = _open_client(env)
        failure = "unpaired" if client is None else ship(entry, client)
    except DoorUrlError as exc:
        sys.stderr.write(f"{exc}\n")
        client, failure = None, "invalid_door_url"
    if client is not None:
        _mark(sidecar, entry, failure)
        client.close()
    if args.json:
        print_json(
            {
                "id": entry["id"],
                "receipt": line,
                "receiptFile": str(log_file(env)),
                "sidecar": str(sidecar),
                "shipped": entry["shipped"],
                "reason": failure,
            }
        )
    else:
        sys.stdout.write(line + "\n")
        state = (
            "shipped to the door"
            if failure is None
            else f"queued ({failure}); `bli-memory-mcp sync` ships it"
        )
        sys.stdout.write(f"Recorded as entry {entry['id']}; {state}.\n")
    return EXIT_OK


def queued_entries(outbox: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Unshipped, not rejected entries, oldest first; unreadable sidecars are skipped, never deleted."""
    entries = []
    for path in sorted(outbox.glob("*.json")) if outbox.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            entry = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(entry, dict) and not entry.get("shipped") and not entry.get("rejected"):
                entries.append((path, entry))
    entries.sort(key=lambda item: str(item[1].get("created_at", "")))
    return entries


def sync_main(argv: list[str]) -> int:
    parser = new_parser(
        "sync",
        f"Ship queued experience entries to the door, oldest first, at most {SYNC_BATCH_MAX} per run;\n"
        "stop at the first failure and leave the rest queued. An entry the door refuses for good\n"
        "(400 invalid, 409 conflicting id) is marked rejected and no longer retried.",
        "exit status: 0 nothing left to ship this run, 1 stopped by a failure or unpaired, 2 bad input",
    )
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    from bli_memory.settings import unpaired_message

    env = os.environ
    from bli_memory.tools import DoorUrlError

    queue = queued_entries(outbox_dir(env))
    try:
        client = _open_client(env) if queue else None
    except DoorUrlError as exc:
        raise CliError(str(exc), EXIT_FAILED) from None
    if queue and client is None:
        raise CliError(unpaired_message(), EXIT_FAILED)
    shipped, rejected, stopped = 0, 0, None
    try:
        for path, entry in queue[:SYNC_BATCH_MAX]:
            failure = ship(entry, client)
            _mark(path, entry, failure)
            if failure is None:
                shipped += 1
            elif failure in PERMANENT_FAILURES:
                rejected += 1
            else:
                stopped = failure
                break
    finally:
        if client is not None:
            client.close()
    left = len(queue) - shipped - rejected
    summary = {"shipped": shipped, "rejected": rejected, "queued": left, "stopped": stopped}
    if args.json:
        print_json(summary)
    else:
        line = f"shipped {shipped}, rejected {rejected}, still queued {left}"
        sys.stdout.write(line + (f" (stopped: {stopped})" if stopped else "") + "\n")
    if stopped:
        raise CliError(
            f"{parser.prog}: stopped at a failed request (reason: {stopped}); the rest stays queued",
            EXIT_FAILED,
        )
    return EXIT_OK
