"""What the human memory commands share: one-line usage errors, the paired-door check, printing results.

`search`, `save`, `forget` (and `status`, `log`, `sync`) parse with `new_parser` + `parse` (a usage
error is one line on stderr and exit 2, never a usage dump), reach the door through `with_tools`, and
print a `ToolResult` as text or `--json` with `emit`. The commands run the very `MemoryTools` the MCP
server runs, so the two cannot drift.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from bli_memory.settings import load_settings, unpaired_message
from bli_memory.tools import (
    INVALID_ARGUMENTS,
    SEARCH_MIN_SIMILARITY,
    DoorUrlError,
    MemoryTools,
    ToolResult,
    open_tools,
    project_dir,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

JSON_HELP = "print the structured answer as JSON on stdout (the same facts as the text)"
TAG_HELP = "the memory space to use (default: the space of the current folder, or $BLI_MEMORY_CONTAINER_TAG)"


class UsageError(Exception):
    """Bad input on the command line; carries the one line to print."""


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
    """The parsed arguments, or the exit status to return (0 after --help, 2 after a usage error)."""
    try:
        return parser.parse_intermixed_args(list(argv))
    except UsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else EXIT_OK


def usage_error(prog: str, message: str) -> int:
    sys.stderr.write(f"{prog}: {message} (see `{prog} --help`)\n")
    return EXIT_USAGE


def with_tools(
    prog: str, run: Callable[[MemoryTools], int], *, min_similarity: float = SEARCH_MIN_SIMILARITY
) -> int:
    """Run `run` with the memory tools of this machine's door; unpaired → one sentence, exit 1."""
    settings = load_settings()
    if not settings.paired:
        sys.stderr.write(unpaired_message() + "\n")
        return EXIT_FAILED
    try:
        tools = open_tools(settings, project_dir(os.environ), min_similarity=min_similarity)
    except DoorUrlError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_FAILED
    try:
        return run(tools)
    finally:
        tools.close()


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def emit(prog: str, result: ToolResult, as_json: bool, *, ok_status: int = EXIT_OK) -> int:
    """Print a result; a failure is one line on stderr (and its JSON on stdout with --json)."""
    if as_json:
        print_json(result.structured)
    if result.is_error:
        sys.stderr.write(f"{prog}: {result.text}\n")
        return EXIT_USAGE if result.reason == INVALID_ARGUMENTS else EXIT_FAILED
    if not as_json:
        sys.stdout.write(result.text.rstrip("\n") + "\n")
    return ok_status
