"""`bli-memory-mcp import FORMAT PATH`: bring memories from another tool (or our own export) in.

The file is read by its format's module in `bli_memory.importers` (pure parsing); every record is
masked by `bli_memory.redact` as the Stop hook masks a turn (its text, and every key and value of its
metadata; our own rows in every field: customId, containerTag…), a vendor tag that holds a secret is
never made an alias, and each record is saved as a fact (a plain save, never
an extraction job) under a customId derived from the format and the record's own id (or its text),
dated by the record's own time when it has one, with `source: import:<format>` and `originalId` in
its metadata. A second import of the same file finds every record already there (`unchanged`).
Our own `jsonl` export goes through the door's import endpoint instead, history and tombstones
included.

Exit status: 0 everything read was imported (or was already there, or was left out on purpose),
1 a record could not be read or was refused, or the door failed or the machine is unpaired,
2 bad input.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from bli_memory.commands.base import JSON_HELP, new_parser, parse, print_json
from bli_memory.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError
from bli_memory.importers import FORMATS, FormatError, Parsed, read
from bli_memory.importers.records import Record, custom_id
from bli_memory.settings import load_settings, unpaired_message

if TYPE_CHECKING:
    from bli_memory.door_client import DoorClient
    from bli_memory.redact import Redaction

#: how far ahead of this machine's clock a record's time may be and still be sent (the door allows 300 s).
CLOCK_SKEW_S = 240.0
#: one door call's budget (a save embeds its text: seconds on a busy machine).
CALL_TIMEOUT_S = 30.0
#: imports of at least this many records show progress on stderr.
PROGRESS_MIN_RECORDS = 50
#: a terminal's bar is redrawn at most this often; plain lines come every tenth of the way.
PROGRESS_REDRAW_S = 0.1
PROGRESS_BAR_CHARS = 30
PROGRESS_LINES = 10
#: rows of our own export sent per request, and the JSON bytes a request stays under (the door takes 1 MiB).
IMPORT_BATCH_ROWS = 200
IMPORT_BATCH_BYTES = 768 * 1024
#: refused records listed in the text summary; --json lists them all.
SHOWN_PROBLEMS = 20


@dataclass
class Summary:
    """What an import did, for the text and the --json answer."""

    format: str
    file: str
    space: str | None
    dry_run: bool
    #: `global`: the records go to the person's own global space (`space` then only names the request's)
    scope: str = "project"
    read: int = 0
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    masked: int = 0
    masked_kinds: dict[str, int] = field(default_factory=dict)
    aliases: list[str] = field(default_factory=list)
    alias_problem: str | None = None
    stopped: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "file": self.file,
            "space": self.space,
            "scope": self.scope,
            "dryRun": self.dry_run,
            "read": self.read,
            "imported": self.imported,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "failed": self.failed,
            "masked": {"count": self.masked, "kinds": dict(sorted(self.masked_kinds.items()))},
            "aliases": self.aliases,
            "aliasProblem": self.alias_problem,
            "stopped": self.stopped,
        }


class Progress:
    """A bar on a terminal's stderr, plain lines elsewhere; nothing for short imports."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self.total = total
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.shown = total >= PROGRESS_MIN_RECORDS
        self.tty = self.shown and self.stream.isatty()
        self._drawn_at = 0.0
        self._next_line = 1
        self._open = False

    def close(self) -> None:
        """End a bar left part-drawn (an import that stopped), so the summary starts on its own line."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False

    def update(self, done: int) -> None:
        if not self.shown:
            return
        if self.tty:
            now = time.monotonic()
            if done < self.total and now - self._drawn_at < PROGRESS_REDRAW_S:
                return
            self._drawn_at = now
            filled = PROGRESS_BAR_CHARS * done // self.total
            bar = "#" * filled + "-" * (PROGRESS_BAR_CHARS - filled)
            self.stream.write(f"\r{self.label} [{bar}] {done}/{self.total}")
            if done >= self.total:
                self.stream.write("\n")
            self._open = done < self.total
        elif done * PROGRESS_LINES >= self._next_line * self.total:
            while done * PROGRESS_LINES >= self._next_line * self.total:
                self._next_line += 1
            self.stream.write(f"{self.label}: {done}/{self.total} records\n")
        self.stream.flush()


def main(argv: list[str]) -> int:
    formats = "\n".join(f"  {name.ljust(12)}  {text}" for name, text in FORMATS.items())
    parser = new_parser(
        "import",
        "Import memories from another memory tool, an agent instruction file, or an export of\n"
        "this one. Each record is masked for secrets and saved as a fact with its original time and\n"
        "where it came from; importing the same file again adds nothing (docs/import.md).",
        f"formats:\n{formats}\n\n"
        "examples:\n"
        "  bli-memory-mcp import mem0 mem0_export.json --dry-run\n"
        "  bli-memory-mcp import instructions CLAUDE.md\n"
        "  bli-memory-mcp import jsonl backup.jsonl\n\n"
        "exit status: 0 imported, 1 a record was unreadable or refused, door failure or unpaired, "
        "2 bad input",
    )
    parser.add_argument("format", choices=list(FORMATS), metavar="FORMAT", help="the file's format (below)")
    parser.add_argument("path", metavar="PATH", help="the file to import")
    parser.add_argument(
        "--space",
        metavar="TAG",
        help="the space to import into (default: the space of the current folder; for jsonl, "
        "each row's own space)",
    )
    parser.add_argument(
        "--scope",
        choices=("project", "global"),
        default="project",
        help="global: import into your own global space (facts that hold in every project, which only "
        "you can read) instead of a repository's space; not with --space or jsonl",
    )
    parser.add_argument("--dry-run", action="store_true", help="read and check the file, write nothing")
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    prog = parser.prog
    if args.scope == "global" and (args.space is not None or args.format == "jsonl"):
        what = "--space" if args.space is not None else "jsonl (each row names its own space)"
        raise CliError(f"{prog}: --scope global does not go with {what}", EXIT_USAGE)
    try:
        parsed = read(args.format, args.path)
    except FormatError as exc:
        raise CliError(f"{prog}: {args.path}: {exc}", EXIT_FAILED) from None
    except OSError as exc:
        raise CliError(f"{prog}: cannot read {args.path}: {exc.strerror or exc}", EXIT_FAILED) from None
    settings = load_settings()
    if not args.dry_run and not settings.paired:
        raise CliError(unpaired_message(), EXIT_FAILED)
    space = args.space
    if space is not None:  # a space's name typed by hand leaves the machine too
        from bli_memory.tools import mask_secrets

        space = mask_secrets(space)
    if space is None and args.format != "jsonl":
        from bli_memory.space import resolve_space
        from bli_memory.tools import project_dir

        space = resolve_space(settings, project_dir(os.environ))
    summary = Summary(args.format, os.path.basename(args.path), space, args.dry_run, scope=args.scope)
    for problem in parsed.problems:
        entry = {"where": problem.where, "reason": problem.reason}
        (summary.failed if problem.malformed else summary.skipped).append(entry)
    if args.dry_run:
        _dry_run(parsed, summary)
    else:
        from bli_memory.tools import door_client_for

        client = door_client_for(settings)
        try:
            if args.format == "jsonl":
                _import_rows(client, parsed, summary)
            else:
                _import_records(client, parsed, summary)
        finally:
            client.close()
    if args.json:
        print_json(summary.to_json())
    else:
        sys.stdout.write(render(summary))
    return EXIT_FAILED if summary.failed or summary.stopped else EXIT_OK


# ---------------------------------------------------------------------------- masking


def _mask(text: str, summary: Summary) -> str:
    from bli_memory.redact import redact

    masked: Redaction = redact(text)
    if masked.masked:
        summary.masked += masked.masked
        for kind, count in masked.kinds.items():
            summary.masked_kinds[kind] = summary.masked_kinds.get(kind, 0) + count
    return masked.text


def _mask_value(value: Any, summary: Summary) -> Any:
    """`value` with every string in it masked, a mapping's keys too (metadata leaves the machine too,
    and a vendor's metadata may be keyed by anything)."""
    if isinstance(value, str):
        return _mask(value, summary)
    if isinstance(value, list):
        return [_mask_value(item, summary) for item in value]
    if isinstance(value, dict):
        return {_mask_value(key, summary): _mask_value(item, summary) for key, item in value.items()}
    return value


def _secret_free_tags(tags: list[str], summary: Summary) -> list[str]:
    """The vendor tags that may become alias names: a tag the redactor would change is left out (a
    masked alias names nothing), and said so."""
    from bli_memory.redact import redact

    kept: list[str] = []
    for tag in tags:
        kinds = redact(tag).kinds
        if kinds:
            reason = f"it looks like it holds a secret ({', '.join(sorted(kinds))}); not made an alias"
            summary.skipped.append({"where": "a vendor tag", "reason": reason})
        else:
            kept.append(tag)
    return kept


def record_metadata(fmt: str, record: Record) -> dict[str, Any]:
    """What an imported memory's metadata says: where it came from, then what the format kept (and
    the record's time as written, when the door could not take it as `createdAt`)."""
    metadata = {"source": f"import:{fmt}", "originalId": record.original_id, **record.metadata}
    if record.created_at is not None and usable_time(record.created_at) is None:
        metadata["originalCreatedAt"] = record.created_at
    return metadata


def usable_time(text: str) -> str | None:
    """`text` when the door takes it as `createdAt` (ISO 8601, from 1970 up to a few minutes ahead of
    this machine's clock); None otherwise, and the memory is dated by the import instead."""
    from datetime import datetime, timezone

    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        seconds = moment.timestamp()
    except (ValueError, OverflowError, OSError):
        return None
    return text if 0 <= seconds <= time.time() + CLOCK_SKEW_S else None


# ---------------------------------------------------------------------------- the imports


def _dry_run(parsed: Parsed, summary: Summary) -> None:
    summary.read = len(parsed.records) + len(parsed.rows)
    for record in parsed.records:
        _mask(record.content, summary)
    for _, row in parsed.rows:
        _mask(row["content"], summary)
    tags = _vendor_tags(parsed, summary.space) if summary.scope == "project" else []
    summary.aliases = _secret_free_tags(tags, summary)


def _vendor_tags(parsed: Parsed, space: str | None) -> list[str]:
    tags = dict.fromkeys(tag for record in parsed.records for tag in record.vendor_tags)
    return [tag for tag in tags if tag != space]


def _deadline() -> float:
    return time.monotonic() + CALL_TIMEOUT_S


def _door_stops(exc: Exception) -> bool:
    """A failure that ends the import (the door is gone, the token refused, the store full), rather
    than refusing one record (a 4xx about that record)."""
    status = getattr(exc, "status", None)
    return status is None or status in (401, 403) or status >= 500


def _import_records(client: DoorClient, parsed: Parsed, summary: Summary) -> None:
    from bli_memory.door_client import DoorCallError

    assert summary.space is not None
    summary.read = len(parsed.records)
    progress = Progress(len(parsed.records), f"import {summary.format}")
    canonical = summary.space
    for done, record in enumerate(parsed.records, start=1):
        content = _mask(record.content, summary)
        metadata = _mask_value(record_metadata(summary.format, record), summary)
        try:
            answer = client.save_imported(
                content,
                summary.space,
                custom_id=custom_id(summary.format, record.original_id),
                metadata=metadata,
                created_at=None if record.created_at is None else usable_time(record.created_at),
                scope=summary.scope,
                deadline=_deadline(),
            )
        except DoorCallError as exc:
            if _door_stops(exc):
                summary.stopped = f"the door failed after {done - 1} records: {exc}"
                progress.close()
                break
            summary.failed.append({"where": _record_where(record), "reason": exc.message or str(exc)})
        else:
            canonical = str(answer.get("containerTag") or canonical)
            _count(summary, str(answer.get("status")))
        progress.update(done)
    if summary.stopped is None and summary.scope == "project":  # a global space takes no aliases
        _set_aliases(client, _secret_free_tags(_vendor_tags(parsed, canonical), summary), canonical, summary)


def _record_where(record: Record) -> str:
    return f"record {record.original_id!r}"


def _count(summary: Summary, status: str) -> None:
    if status == "created":
        summary.imported += 1
    elif status == "updated":
        summary.updated += 1
    else:
        summary.unchanged += 1


def _set_aliases(client: DoorClient, tags: list[str], canonical: str, summary: Summary) -> None:
    """Make the vendor's tags (Supermemory's `containerTags`) aliases of the space the memories landed in."""
    from bli_memory.door_client import DoorCallError

    for tag in tags:
        try:
            client.set_alias(tag, canonical, deadline=_deadline())
        except DoorCallError as exc:
            if exc.status == 403:
                summary.alias_problem = (
                    "setting aliases needs an admin token (pair a device with --admin); not set: "
                    + ", ".join(tags[len(summary.aliases) :])
                )
            else:
                summary.alias_problem = f"alias {tag!r} not set: {exc.message or exc}"
            return
        summary.aliases.append(tag)


def _import_rows(client: DoorClient, parsed: Parsed, summary: Summary) -> None:
    """Our own export: its rows in their order, in batches, through the door's import endpoint."""
    from bli_memory.door_client import DoorCallError

    summary.read = len(parsed.rows)
    progress = Progress(len(parsed.rows), "import jsonl")
    done = 0
    pending = _batches(parsed.rows, summary)
    pending.reverse()
    while pending:
        batch = pending.pop()
        try:
            answer = client.import_rows([row for _, row in batch], deadline=_deadline())
        except DoorCallError as exc:
            if _door_stops(exc):
                summary.stopped = f"the door failed after {done} rows: {exc}"
                progress.close()
                return
            if len(batch) > 1:  # one row the door refuses whole: the halves are sent on their own
                half = len(batch) // 2
                pending += [batch[half:], batch[:half]]
                continue
            for where, _ in batch:
                summary.failed.append({"where": where, "reason": exc.message or str(exc)})
            done += len(batch)
            continue
        results = answer.get("results")
        if not isinstance(results, list) or len(results) != len(batch):
            summary.stopped = "the door's answer to an import does not list every row"
            return
        for (where, _), result in zip(batch, results, strict=True):
            if isinstance(result, dict) and "status" in result:
                _count(summary, str(result["status"]))
            else:
                message = result.get("message") if isinstance(result, dict) else None
                summary.failed.append({"where": where, "reason": str(message or "refused")})
        done += len(batch)
        progress.update(done)


def _batches(
    rows: list[tuple[str, dict[str, Any]]], summary: Summary
) -> list[list[tuple[str, dict[str, Any]]]]:
    """The rows, masked and moved to `--space` when given, cut into requests the door accepts."""
    batches: list[list[tuple[str, dict[str, Any]]]] = []
    batch: list[tuple[str, dict[str, Any]]] = []
    size = 0
    for where, row in rows:
        # every string of the row: content, metadata (keys too), customId, containerTag, ids
        ready: dict[str, Any] = _mask_value(dict(row), summary)
        if summary.space is not None:
            ready["containerTag"] = summary.space
        length = len(json.dumps(ready, ensure_ascii=False).encode("utf-8"))
        if batch and (len(batch) >= IMPORT_BATCH_ROWS or size + length > IMPORT_BATCH_BYTES):
            batches.append(batch)
            batch, size = [], 0
        batch.append((where, ready))
        size += length
    if batch:
        batches.append(batch)
    return batches


# ---------------------------------------------------------------------------- the answer


def render(summary: Summary) -> str:
    """The text summary: one headline, then what was left out and why."""
    where = f"space {summary.space}" if summary.space else "each row's own space"
    if summary.scope == "global":
        where = "your global space"
    if summary.dry_run:
        lines = [
            f"Dry run: would import {summary.read} from {summary.format} ({summary.file}) into {where}; "
            f"{len(summary.skipped)} left out, {len(summary.failed)} unreadable. Nothing was written."
        ]
    else:
        lines = [
            f"Imported from {summary.format} ({summary.file}) into {where}: {summary.imported} imported, "
            f"{summary.updated} updated, {summary.unchanged} unchanged, "
            f"{len(summary.skipped) + len(summary.failed)} skipped."
        ]
    problems = [("not imported", entry) for entry in summary.failed] + [
        ("left out", entry) for entry in summary.skipped
    ]
    for label, entry in problems[:SHOWN_PROBLEMS]:
        lines.append(f"  {label}: {entry['where']}: {entry['reason']}")
    if len(problems) > SHOWN_PROBLEMS:
        lines.append(f"  … and {len(problems) - SHOWN_PROBLEMS} more (--json lists them all)")
    if summary.masked:
        kinds = ", ".join(f"{kind} ×{count}" for kind, count in sorted(summary.masked_kinds.items()))
        verb = "would be masked" if summary.dry_run else "masked before saving"
        lines.append(f"{summary.masked} secret{'s' if summary.masked != 1 else ''} {verb} ({kinds}).")
    if summary.aliases:
        verb = "would become" if summary.dry_run else "are now"
        lines.append(f"Vendor tags {verb} aliases of the space: {', '.join(summary.aliases)}.")
    if summary.alias_problem:
        lines.append(f"Aliases: {summary.alias_problem}.")
    if summary.stopped:
        lines.append(f"Stopped: {summary.stopped}")
    return "\n".join(lines) + "\n"
