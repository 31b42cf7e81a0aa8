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
import re
import signal
import sys
import time
from collections.abc import Iterator
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
        if args.space is not None:
            from bli_memory.tools import mask_secrets

            space = mask_secrets(args.space)  # a tag typed here leaves the machine as any other text does
        else:
            from bli_memory.space import resolve_space
            from bli_memory.tools import project_dir

            space = resolve_space(settings, project_dir(os.environ))
    from bli_memory.tools import door_client_for

    client = door_client_for(settings)
    try:
        read = Export(client, space, parser.prog)
        exported_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        first = read.next_page()  # the space's tags, for the header, come with the first page
        scope = "every space" if space is None else f"space {read.tags[0] if read.tags else space}"
        if args.format == "jsonl":
            header = {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "exportedAt": exported_at,
                "spaces": read.tags,
            }
            chunks = _jsonl(header, first, read)
        else:
            rows = [*first, *(row for page in read.pages() for row in page)]
            chunks = iter([markdown(rows, exported_at, scope)])
        _write(chunks, args.output, parser.prog)
    finally:
        client.close()
    counts = read.counts
    sys.stderr.write(
        f"Exported {sum(counts.values())} rows of {scope} to {args.output or 'stdout'}: "
        f"{counts['current']} current, {counts['superseded']} earlier versions, "
        f"{counts['forgotten']} forgotten.\n"
    )
    return EXIT_OK


class Export:
    """The door's export pages of one space (or of every space), read one at a time."""

    def __init__(self, client: DoorClient, space: str | None, prog: str) -> None:
        self.client = client
        self.space = space
        self.prog = prog
        self.tags: list[str] | None = None
        self.counts = {"current": 0, "superseded": 0, "forgotten": 0}
        self._after: str | None = None
        self._done = False

    def next_page(self) -> list[dict[str, Any]]:
        """The next page's rows ([] at the end); CliError when the door fails."""
        from bli_memory.door_client import DoorCallError

        if self._done:
            return []
        read = sum(self.counts.values())
        try:
            page = self.client.export_page(
                self.space, after=self._after, limit=PAGE_ROWS, deadline=time.monotonic() + CALL_TIMEOUT_S
            )
        except DoorCallError as exc:
            raise CliError(f"{self.prog}: the door failed after {read} rows: {exc}", EXIT_FAILED) from None
        rows = page.get("rows")
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise CliError(f"{self.prog}: the door's export answer has no rows", EXIT_FAILED)
        searched = page.get("searched")
        if self.tags is None and isinstance(searched, list):
            self.tags = [str(tag) for tag in searched]
        for row in rows:
            status = str(row.get("status"))
            self.counts[status] = self.counts.get(status, 0) + 1
        after = page.get("next")
        self._after = after if isinstance(after, str) else None
        self._done = self._after is None or not rows
        return rows

    def pages(self) -> Iterator[list[dict[str, Any]]]:
        """The pages after those already read."""
        while not self._done:
            yield self.next_page()


def _jsonl(header: dict[str, Any], first: list[dict[str, Any]], read: Export) -> Iterator[str]:
    """The header line, then one row a line, page by page as the door gives them."""
    yield json.dumps(header, ensure_ascii=False) + "\n"
    for page in _chain(first, read):
        yield "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in page)


def _chain(first: list[dict[str, Any]], read: Export) -> Iterator[list[dict[str, Any]]]:
    yield first
    yield from read.pages()


#: the signals that stop an export on the way to its file, cleaning up its temporary first.
STOPPING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class _Stopped(BaseException):
    """A stopping signal arrived; a BaseException so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_stop_here() -> Iterator[None]:
    """While the temporary file exists, SIGINT/SIGTERM/SIGHUP unwind the stack (so `finally` removes it)
    instead of ending the process where it stands."""

    def stop(signum: int, _frame: object) -> None:
        raise _Stopped(signum)

    previous = {number: signal.signal(number, stop) for number in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _temporary_name(output: str, pid: int) -> str:
    return f".{os.path.basename(output)}.{pid}.tmp"


def _remove_dead_temporaries(output: str) -> None:
    """Remove what an export to the same file left when it was killed outright (SIGKILL, a power cut):
    a temporary of a process that no longer runs. A live process's temporary is left alone."""
    folder = os.path.dirname(os.path.abspath(output))
    pattern = re.compile(r"\." + re.escape(os.path.basename(output)) + r"\.([0-9]+)\.tmp")
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            found = pattern.fullmatch(name)
            if found is None or _process_runs(int(found.group(1))):
                continue
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or no pid at all: not ours to judge
    return True


def _write(chunks: Iterator[str], output: str | None, prog: str) -> None:
    """stdout as the pages come, or FILE written whole (a temporary file renamed over it only when
    every page was read), private (0600): memories are a person's notes. A stopped export leaves no
    temporary behind, and one killed outright has its temporary removed by the next export there."""
    if output is None:
        for chunk in chunks:
            sys.stdout.write(chunk)
        return
    _remove_dead_temporaries(output)
    folder = os.path.dirname(os.path.abspath(output))
    temporary = os.path.join(folder, _temporary_name(output, os.getpid()))
    try:
        with _signals_stop_here():
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as opened:
                for chunk in chunks:
                    opened.write(chunk)
            os.replace(temporary, output)
    except OSError as exc:
        raise CliError(f"{prog}: cannot write {output}: {exc.strerror or exc}", EXIT_FAILED) from None
    except _Stopped as stopped:
        name = signal.Signals(stopped.signum).name
        raise CliError(
            f"{prog}: stopped by {name}; {output} is left as it was", 128 + stopped.signum
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)  # gone already after the rename; left by a failure otherwise


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
