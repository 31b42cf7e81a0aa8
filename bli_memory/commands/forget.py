"""`bli-memory-mcp forget (--id ID | --content TEXT | --query TEXT)`: the forget_memory tool.

A forgotten memory is tombstoned, never erased. Exit status: 0 forgotten, 1 nothing matched, the
door failed or the machine is unpaired (like grep, "no match" is not success for a script that
asked to remove something), 2 bad input.
"""

from __future__ import annotations

from typing import Any

from bli_memory.commands.base import (
    EXIT_FAILED,
    EXIT_OK,
    JSON_HELP,
    TAG_HELP,
    emit,
    new_parser,
    parse,
    usage_error,
    with_tools,
)
from bli_memory.tools import MemoryTools
from bli_memory.wire.contract import FORGET_CLOSEST_MIN_SIMILARITY, WRITE_SCOPES


def main(argv: list[str]) -> int:
    parser = new_parser(
        "forget",
        "Tombstone one memory of this folder's space, by id, by its exact text, or as the\n"
        f"closest match to a query (only at cosine similarity >= {FORGET_CLOSEST_MIN_SIMILARITY}).\n"
        "Prints exactly what was forgotten.",
        "examples:\n"
        "  bli-memory-mcp forget --id 3f2c9a\n"
        "  bli-memory-mcp forget --content 'Ana owns releases'\n"
        "  bli-memory-mcp forget --query 'who owns releases'\n\n"
        "exit status: 0 forgotten, 1 nothing matched / door failure / unpaired, 2 bad input",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", metavar="ID", help="the memory's id (from search)")
    which.add_argument("--content", metavar="TEXT", help="the memory's exact text")
    which.add_argument("--query", metavar="TEXT", help="forget the closest match, if it is close enough")
    parser.add_argument(
        "--scope",
        choices=WRITE_SCOPES,
        default="project",
        help="where --content and --query look: project (default) or global (your own space); "
        "an --id is found in either",
    )
    parser.add_argument("--container-tag", metavar="TAG", help=TAG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    arguments: dict[str, Any] = {"id": args.id, "content": args.content, "query": args.query}
    arguments = {key: value for key, value in arguments.items() if value is not None}
    if not all(value.strip() for value in arguments.values()):
        raise usage_error(parser.prog, "the memory to forget must not be empty")
    arguments["containerTag"] = args.container_tag
    arguments["scope"] = args.scope

    def run(tools: MemoryTools) -> int:
        result = tools.call("forget_memory", arguments)
        forgot = result.structured.get("forgotten") is not None
        return emit(parser.prog, result, args.json, ok_status=EXIT_OK if forgot else EXIT_FAILED)

    return with_tools(parser.prog, run)
