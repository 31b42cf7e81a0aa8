"""What the human memory commands share: one-line usage errors, the paired-door check, printing results.

`search`, `save`, `forget` (and `status`, `log`, `sync`) parse with `new_parser` + `parse` (a usage
error is one line on stderr and exit 2, never a usage dump), reach the door through `with_tools`, and
print a `ToolResult` as text or `--json` with `emit`. The commands run the very `MemoryTools` the MCP
server runs, so the two cannot drift.

A command that cannot go on raises `CliError` (`UsageError` for bad input, see `usage_error`) from
`bli_memory.errors`; `bli_memory.cli` prints it as one line and exits with its status.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from bli_memory.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, UsageError
from bli_memory.settings import load_settings, unpaired_message
from bli_memory.tools import (
    INVALID_ARGUMENTS,
    SEARCH_MIN_SIMILARITY,
    DoorUrlError,
    MemoryTools,
    ToolResult,
    door_client_for,
    open_tools,
    project_dir,
)

if TYPE_CHECKING:
    from bli_memory.door_client import DoorClient
    from bli_memory.settings import Settings

JSON_HELP = "print the structured answer as JSON on stdout (the same facts as the text)"
TAG_HELP = "the memory space to use (default: the space of the current folder, or $BLI_MEMORY_CONTAINER_TAG)"


class CommandParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (no usage dump) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def new_parser(name: str, description: str, epilog: str = "") -> CommandParser:
    return CommandParser(
        prog=f"bli-memory-mcp {name}",
        description=description,
        epilog=epilog or None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def parse(parser: CommandParser, argv: Sequence[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit status to return after --help; UsageError for bad input."""
    try:
        return parser.parse_intermixed_args(list(argv))
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK


def usage_error(prog: str, message: str) -> UsageError:
    """The error for input the parser accepted but the command cannot use: `raise usage_error(...)`."""
    return UsageError(f"{prog}: {message} (see `{prog} --help`)")


def paired_door_client(settings: Settings | None = None) -> DoorClient:
    """This machine's door client; unpaired or a bad door URL → one sentence, exit 1."""
    settings = load_settings() if settings is None else settings
    if not settings.paired:
        raise CliError(unpaired_message(), EXIT_FAILED)
    try:
        return door_client_for(settings)
    except DoorUrlError as exc:
        raise CliError(str(exc), EXIT_FAILED) from None


def with_tools(
    prog: str, run: Callable[[MemoryTools], int], *, min_similarity: float = SEARCH_MIN_SIMILARITY
) -> int:
    """Run `run` with the memory tools of this machine's door; unpaired → one sentence, exit 1."""
    settings = load_settings()
    if not settings.paired:
        raise CliError(unpaired_message(), EXIT_FAILED)
    try:
        tools = open_tools(settings, project_dir(os.environ), min_similarity=min_similarity)
    except DoorUrlError as exc:
        raise CliError(str(exc), EXIT_FAILED) from None
    try:
        return run(tools)
    finally:
        tools.close()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def emit(prog: str, result: ToolResult, as_json: bool, *, ok_status: int = EXIT_OK) -> int:
    """Print a result; a failure is its JSON on stdout with --json, and a CliError (one stderr line)."""
    if as_json:
        print_json(result.structured)
    if result.is_error:
        status = EXIT_USAGE if result.reason == INVALID_ARGUMENTS else EXIT_FAILED
        raise CliError(f"{prog}: {result.text}", status)
    if not as_json:
        sys.stdout.write(result.text.rstrip("\n") + "\n")
    return ok_status
