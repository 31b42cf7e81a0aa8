"""`bli-memory-mcp search QUERY`: the search_memory tool for people and scripts.

Exit status: 0 done (zero matches included: silence is data), 1 the door failed or the machine is
unpaired, 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from bli_memory.commands.base import JSON_HELP, TAG_HELP, emit, new_parser, parse, usage_error, with_tools
from bli_memory.tools import SEARCH_MIN_SIMILARITY
from bli_memory.wire.contract import MAX_LIMIT, SEARCH_LIMIT_DEFAULT, SEARCH_SCOPE_DEFAULT, SEARCH_SCOPES


def limit_arg(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {value!r}") from None
    if not 1 <= number <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_LIMIT}, got {number}")
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
        "  bli-memory-mcp search --threshold 0 deploy    (no floor)\n"
        "  bli-memory-mcp search --scope global editor preferences\n\n"
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
    parser.add_argument(
        "--scope",
        choices=SEARCH_SCOPES,
        default=SEARCH_SCOPE_DEFAULT,
        help="project: this folder's space; global: your own cross-project facts; "
        f"all: both, ranked together (default {SEARCH_SCOPE_DEFAULT})",
    )
    parser.add_argument("--container-tag", metavar="TAG", help=TAG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    query = " ".join(args.query).strip()
    if not query:
        raise usage_error(parser.prog, "QUERY must not be empty")
    arguments: dict[str, Any] = {
        "query": query,
        "limit": args.limit,
        "containerTag": args.container_tag,
        "scope": args.scope,
    }
    return with_tools(
        parser.prog,
        lambda tools: emit(parser.prog, tools.call("search_memory", arguments), args.json),
        min_similarity=args.threshold,
    )
