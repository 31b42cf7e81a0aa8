"""`bli-memory-mcp export`: every memory of a space (or of every space of the team), with history.

`--format jsonl` (the default) writes a header line and then one row a line — every version,
current, superseded or forgotten, in the order the door wrote them — which `import jsonl` writes
back exactly as it was (same ids, texts, times, customIds, metadata, versions and tombstones).
`--format markdown` writes the same for people to read: one section a space, one entry a memory, its
earlier versions below it.

Exit status: 0 exported, 1 the door failed, the file could not be written or the machine is
unpaired, 2 bad input.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from bli_memory.commands.base import new_parser, parse, usage_error
from bli_memory.errors import EXIT_FAILED, EXIT_OK, CliError
from bli_memory.importers.jsonl import FORMAT_NAME, FORMAT_VERSION
from bli_memory.settings import load_settings, unpaired_message

if TYPE_CHECKING:
    from bli_memory.door_client import DoorClient

PAGE_ROWS = 200
CALL_TIMEOUT_S = 30.0


def main(argv: list[str]) -> int:
    parser = new_parser(
        "export",
        "Write every memory of this folder's space (or of every space, --all) with its earlier\n"
        "versions and its tombstones. `import jsonl` reads the jsonl back exactly.",
        "examples:\n"
        "  bli-memory-mcp export --output backup.jsonl\n"
        "  bli-memory-mcp export --all --format markdown --output memories.md\n\n"
        "exit status: 0 exported, 1 door failure, unwritable file or unpaired, 2 bad input",
    )
    parser.add_argument("--space", metavar="TAG", help="the space to export (default: this folder's)")
    parser.add_argument("--all", action="store_true", help="every space of your team")
    parser.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl", help="default: jsonl")
    parser.add_argument("--output", metavar="FILE", help="write to FILE (default: stdout)")
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    if args.space and args.all:
        raise usage_error(parser.prog, "give --space or --all, not both")
    settings = load_settings()
    if not settings.paired:
        raise CliError(unpaired_message(), EXIT_FAILED)
    space: str | None = None
    if not args.all:
        space = args.space
        if space is None:
            from bli_memory.space import resolve_space
            from bli_memory.tools import project_dir

            space = resolve_space(settings, project_dir(os.environ))
    from bli_memory.tools import door_client_for

    client = door_client_for(settings)
    try:
        rows, tags = _all_rows(client, space, parser.prog)
    finally:
        client.close()
    exported_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    scope = "every space" if space is None else f"space {tags[0] if tags else space}"
    if args.format == "jsonl":
        header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "exportedAt": exported_at, "spaces": tags}
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [header, *rows])
    else:
        text = markdown(rows, exported_at, scope)
    _write(text, args.output, parser.prog)
    counts = {
        status: sum(1 for row in rows if row["status"] == status)
        for status in ("current", "superseded", "forgotten")
    }
    target = args.output or "stdout"
    sys.stderr.write(
        f"Exported {len(rows)} rows of {scope} to {target}: {counts['current']} current, "
        f"{counts['superseded']} earlier versions, {counts['forgotten']} forgotten.\n"
    )
    return EXIT_OK


def _all_rows(
    client: DoorClient, space: str | None, prog: str
) -> tuple[list[dict[str, Any]], list[str] | None]:
    from bli_memory.door_client import DoorCallError

    rows: list[dict[str, Any]] = []
    tags: list[str] | None = None
    after: str | None = None
    while True:
        try:
            page = client.export_page(
                space, after=after, limit=PAGE_ROWS, deadline=time.monotonic() + CALL_TIMEOUT_S
            )
        except DoorCallError as exc:
            raise CliError(f"{prog}: the door failed after {len(rows)} rows: {exc}", EXIT_FAILED) from None
        found = page.get("rows")
        if not isinstance(found, list):
            raise CliError(f"{prog}: the door's export answer has no rows", EXIT_FAILED)
        rows.extend(found)
        searched = page.get("searched")
        if tags is None and isinstance(searched, list):
            tags = [str(tag) for tag in searched]
        after = page.get("next")
        if not isinstance(after, str) or not found:
            return rows, tags


def _write(text: str, output: str | None, prog: str) -> None:
    """stdout, or FILE written whole (a temporary file renamed over it), private (0600): memories
    are a person's notes."""
    if output is None:
        sys.stdout.write(text)
        return
    folder = os.path.dirname(os.path.abspath(output))
    temporary = os.path.join(folder, f".{os.path.basename(output)}.{os.getpid()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as opened:
            opened.write(text)
        os.replace(temporary, output)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise CliError(f"{prog}: cannot write {output}: {exc.strerror or exc}", EXIT_FAILED) from None


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def markdown(rows: list[dict[str, Any]], exported_at: str, scope: str) -> str:
    """The rows for people: a section a space, a memory's latest version first, its history below."""
    chains: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        chains.setdefault(row["rootId"], []).append(row)
    spaces: dict[str, list[list[dict[str, Any]]]] = {}
    for chain in chains.values():
        chain.sort(key=lambda row: row["version"])
        spaces.setdefault(chain[-1]["containerTag"], []).append(chain)
    current = sum(1 for chain in chains.values() if chain[-1]["status"] == "current")
    lines = [
        "# bli-memory export",
        "",
        f"{scope} · exported {exported_at} · {current} current memories · {len(rows)} rows with history",
    ]
    for tag, memories in spaces.items():
        lines += ["", f"## Space `{tag}`"]
        for chain in memories:
            latest = chain[-1]
            state = "forgotten" if latest["status"] == "forgotten" else latest["status"]
            lines += ["", f"### {latest['id']} · {state} · version {latest['version']}", ""]
            facts = [f"created {latest['createdAt']}", f"updated {latest['updatedAt']}"]
            if latest["supersededAt"]:
                facts.append(f"{state} {latest['supersededAt']}")
            if latest.get("customId"):
                facts.append(f"customId `{latest['customId']}`")
            if latest.get("metadata"):
                facts.append("metadata `" + json.dumps(latest["metadata"], ensure_ascii=False) + "`")
            lines += [" · ".join(facts), "", _quoted(latest["content"])]
            for earlier in reversed(chain[:-1]):
                lines += [
                    "",
                    f"- version {earlier['version']} ({earlier['id']}), {earlier['status']} "
                    f"{earlier['supersededAt']}:",
                    "",
                    "  " + _quoted(earlier["content"]).replace("\n", "\n  "),
                ]
    return "\n".join(lines) + "\n"
