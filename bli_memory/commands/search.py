"""`bli-memory-mcp search QUERY`: the search_memory tool for people and scripts.

Also home of the small plumbing the human memory commands share (search, save, forget): a parser
whose errors are one line and exit 2, the unpaired check, and printing a `ToolResult` as text or
`--json`. The commands run the very `MemoryTools` the MCP server runs, so the two cannot drift.

Exit status: 0 done (zero matches included: silence is data), 1 the door failed or the machine is
unpaired, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from bli_memory.mcp_server import (
    INVALID_ARGUMENTS,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    SEARCH_MIN_SIMILARITY,
    MemoryTools,
    ToolResult,
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
    from bli_memory.mcp_server import DoorUrlError, open_tools, project_dir
    from bli_memory.settings import load_settings, unpaired_message

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


def limit_arg(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {value!r}") from None
    if not 1 <= number <= SEARCH_LIMIT_MAX:
        raise argparse.ArgumentTypeError(f"must be between 1 and {SEARCH_LIMIT_MAX}, got {number}")
    return number


def threshold_arg(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {value!r}") from None
    if not 0.0 <= number <= 1.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return number


def main(argv: list[str]) -> int:
    parser = new_parser(
        "search",
        "Search the memories of this folder's space by meaning, keyword and recency at once.\n"
        "Remembered facts and documents are listed apart, each with its id, age and source;\n"
        "cosine similarity is shown only when the door measured one. A memory whose cosine\n"
        f"similarity is below {SEARCH_MIN_SIMILARITY} is not a match (the search_memory tool's floor);\n"
        "--threshold sets another (0 lists the nearest memories whatever they are). Rows the\n"
        "door found by keyword alone carry no similarity and are always kept.",
        "examples:\n"
        "  bli-memory-mcp search why did we pin numpy\n"
        "  bli-memory-mcp search --limit 10 --json release checklist\n"
        "  bli-memory-mcp search --threshold 0 deploy    (no floor)\n\n"
        "exit status: 0 answered (no match included), 1 door failure or unpaired, 2 bad input",
    )
    parser.add_argument(
        "query", nargs="+", metavar="QUERY", help="what to look for (several words are joined)"
    )
    parser.add_argument(
        "--limit",
        type=limit_arg,
        default=SEARCH_LIMIT_DEFAULT,
        help=f"hits at most (default {SEARCH_LIMIT_DEFAULT})",
    )
    parser.add_argument(
        "--threshold",
        type=threshold_arg,
        default=SEARCH_MIN_SIMILARITY,
        metavar="SIM",
        help=f"lowest cosine similarity that counts as a match, 0..1 (default {SEARCH_MIN_SIMILARITY})",
    )
    parser.add_argument("--container-tag", metavar="TAG", help=TAG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    query = " ".join(args.query).strip()
    if not query:
        return usage_error(parser.prog, "QUERY must not be empty")
    arguments: dict[str, Any] = {"query": query, "limit": args.limit, "containerTag": args.container_tag}
    return with_tools(
        parser.prog,
        lambda tools: emit(parser.prog, tools.call("search_memory", arguments), args.json),
        min_similarity=args.threshold,
    )
