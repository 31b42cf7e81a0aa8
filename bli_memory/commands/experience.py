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
rejected and skipped from then on instead of blocking the queue. After the entries, `sync` sends this
machine's hourly hook figures of the last 14 days (`POST /api/ops/hook-stats`); whether that worked is
reported on a line of its own and never changes the exit status.

Reasons are one line of at most 500 characters, opinions about tools only: a reason in which the
redactor finds a secret is refused.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from bli_memory.commands.base import JSON_HELP, new_parser, parse, print_json, usage_error
from bli_memory.errors import EXIT_FAILED, EXIT_OK, CliError
from bli_memory.experience_log import (
    PERMANENT_FAILURES,
    SYNC_BATCH_MAX,
    ExperienceWriteError,
    check_opinion,
    outbox_dir,
    queued_entries,
    record_opinion,
    ship,
    ship_hook_stats,
    shipping_state,
    write_last_sync,
)
from bli_memory.experience_log import mark as _mark
from bli_memory.wire.contract import EXPERIENCE_STORES, EXPERIENCE_VERDICTS, MAX_EXPERIENCE_REASON_CHARS


def _open_client(env: Mapping[str, str]) -> Any:
    """A DoorClient for a paired machine; None when unpaired. A bad door URL raises DoorUrlError."""
    from bli_memory.settings import load_settings
    from bli_memory.tools import door_client_for

    settings = load_settings(env)
    return door_client_for(settings) if settings.paired else None


def default_project(env: Mapping[str, str]) -> str:
    """The project an opinion is about: the name of the folder whose space is the default."""
    from bli_memory.tools import project_dir

    return os.path.basename(os.path.abspath(project_dir(env)))


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
    parser.add_argument("verdict", choices=EXPERIENCE_VERDICTS, help="win, loss or noise")
    parser.add_argument(
        "reason", nargs="*", metavar="REASON", help="why, in one line (several words are joined)"
    )
    parser.add_argument(
        "--store",
        required=True,
        choices=EXPERIENCE_STORES,
        help="which store's recall: bli, supermemory, both",
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
        reason = sys.stdin.read(MAX_EXPERIENCE_REASON_CHARS * 4 + 2).rstrip("\r\n").strip()
    else:
        reason = " ".join(args.reason).strip()
    problem = check_opinion(args.store, args.verdict, reason)
    if problem is not None:
        raise usage_error(parser.prog, problem)

    from bli_memory.tools import DoorUrlError

    env = os.environ
    try:
        client = _open_client(env)
    except DoorUrlError as exc:
        sys.stderr.write(f"{exc}\n")
        client = None
        unusable = "invalid_door_url"
    else:
        unusable = "unpaired"
    try:
        recorded = record_opinion(
            args.store,
            args.verdict,
            reason,
            env=env,
            client=client,
            agent=args.agent,
            project=args.project or default_project(env),
        )
    except ExperienceWriteError as exc:
        raise CliError(f"{parser.prog}: {exc}", EXIT_FAILED) from None
    finally:
        if client is not None:
            client.close()
    failure = recorded.failure if client is not None else unusable
    if args.json:
        print_json({**recorded.to_json(), "reason": failure})
    else:
        sys.stdout.write(recorded.receipt + "\n")
        sys.stdout.write(f"Recorded as entry {recorded.id}; {shipping_state(failure)}.\n")
    return EXIT_OK


def sync_main(argv: list[str]) -> int:
    parser = new_parser(
        "sync",
        f"Ship queued experience entries to the door, oldest first, at most {SYNC_BATCH_MAX} per run;\n"
        "stop at the first failure and leave the rest queued. An entry the door refuses for good\n"
        "(400 invalid, 409 conflicting id) is marked rejected and no longer retried. Then send this\n"
        "machine's hourly hook figures of the last 14 days (content-free counts) for the door's ops view.",
        "exit status: 0 nothing left to ship this run, 1 stopped by a failure or unpaired, 2 bad input\n"
        "(sending the hook figures never changes it: its outcome is a line of its own)",
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
        client = _open_client(env)
    except DoorUrlError as exc:
        if queue:
            _remember(env, 0, 0, len(queue), "invalid_door_url")
            raise CliError(str(exc), EXIT_FAILED) from None
        client, unusable = None, "invalid_door_url"
    else:
        unusable = "unpaired"
    if queue and client is None:
        _remember(env, 0, 0, len(queue), "unpaired")
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
        hook_stats = ship_hook_stats(env, client) if client is not None else {"hours": 0, "failed": unusable}
    finally:
        if client is not None:
            client.close()
    left = len(queue) - shipped - rejected
    summary = _remember(env, shipped, rejected, left, stopped, hook_stats)
    if args.json:
        print_json(summary)
    else:
        line = f"shipped {shipped}, rejected {rejected}, still queued {left}"
        sys.stdout.write(line + (f" (stopped: {stopped})" if stopped else "") + "\n")
        sys.stdout.write(hook_stats_line(hook_stats) + "\n")
    if stopped:
        raise CliError(
            f"{parser.prog}: stopped at a failed request (reason: {stopped}); the rest stays queued",
            EXIT_FAILED,
        )
    return EXIT_OK


def hook_stats_line(result: Mapping[str, Any]) -> str:
    """What sending the hook figures did, on a line of its own (it never changes sync's exit status)."""
    if result.get("failed"):
        return f"hook stats: not sent ({result['failed']})"
    return f"hook stats: sent {result.get('hours', 0)} hours"


def _remember(
    env: Mapping[str, str],
    shipped: int,
    rejected: int,
    queued: int,
    stopped: str | None,
    hook_stats: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """This run's summary, also written for `status` and `ops` (`experience_log.write_last_sync`)."""
    summary: dict[str, Any] = {"shipped": shipped, "rejected": rejected, "queued": queued, "stopped": stopped}
    if hook_stats is not None:
        summary["hookStats"] = dict(hook_stats)
    write_last_sync(env, summary)
    return summary
