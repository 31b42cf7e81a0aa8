"""`bli-memory-mcp list` and `bli-memory-mcp recent`: the list_memories and recent_memories tools.

`list` prints one page of this folder's space, newest first, and the cursor of the next page;
`recent` the latest memories. Each row shows its id, age, kind (fact or document) and source.
Exit status: 0 answered (an empty space included), 1 the door failed or the machine is unpaired,
2 bad input.
"""

from __future__ import annotations

from typing import Any

from bli_memory.commands.base import JSON_HELP, TAG_HELP, emit, new_parser, parse, with_tools
from bli_memory.commands.search import limit_arg
from bli_memory.tools import BROWSE_SCOPES
from bli_memory.wire.contract import LIST_LIMIT_DEFAULT, RECENT_LIMIT_DEFAULT

EXIT_HELP = "exit status: 0 answered (an empty space included), 1 door failure or unpaired, 2 bad input"


def list_main(argv: list[str]) -> int:
    parser = new_parser(
        "list",
        "List the memories of this folder's space, newest first, one page at a time. Each row\n"
        "shows its id, age, kind (fact or document) and source (how it was saved, by whom, from\n"
        "which device). The last line names the cursor of the next page: pass it to --cursor.\n"
        "Memories saved while you page never repeat or shift a page. Pinned memories are not listed.",
        "examples:\n"
        "  bli-memory-mcp list\n"
        "  bli-memory-mcp list --limit 50 --json\n"
        "  bli-memory-mcp list --cursor c1.WzE3...\n\n" + EXIT_HELP,
    )
    parser.add_argument(
        "--limit",
        type=limit_arg,
        default=LIST_LIMIT_DEFAULT,
        help=f"memories on the page at most (default {LIST_LIMIT_DEFAULT})",
    )
    parser.add_argument("--cursor", metavar="CURSOR", help="the next page's cursor, as the last page gave it")
    _common(parser)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    arguments: dict[str, Any] = {"limit": args.limit, "containerTag": args.container_tag, "scope": args.scope}
    if args.cursor is not None:
        arguments["cursor"] = args.cursor
    return with_tools(
        parser.prog, lambda tools: emit(parser.prog, tools.call("list_memories", arguments), args.json)
    )


def recent_main(argv: list[str]) -> int:
    parser = new_parser(
        "recent",
        "The most recently saved or changed memories of this folder's space, newest first, each\n"
        "with its id, age, kind (fact or document) and source.",
        "examples:\n  bli-memory-mcp recent\n  bli-memory-mcp recent --limit 3 --json\n\n" + EXIT_HELP,
    )
    parser.add_argument(
        "--limit",
        type=limit_arg,
        default=RECENT_LIMIT_DEFAULT,
        help=f"memories at most (default {RECENT_LIMIT_DEFAULT})",
    )
    _common(parser)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    arguments: dict[str, Any] = {"limit": args.limit, "containerTag": args.container_tag, "scope": args.scope}
    return with_tools(
        parser.prog, lambda tools: emit(parser.prog, tools.call("recent_memories", arguments), args.json)
    )


def _common(parser: Any) -> None:
    parser.add_argument(
        "--scope",
        choices=BROWSE_SCOPES,
        default="project",
        help="which space: project (this repository's, the default), global (your own cross-project facts) or all (both)",
    )
    parser.add_argument("--container-tag", metavar="TAG", help=TAG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
