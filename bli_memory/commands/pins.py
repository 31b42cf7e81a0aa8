"""`bli-memory-mcp pin TEXT`, `pins`, `unpin ID`: the pin_memory, list_pins and unpin_memory tools.

A pin is a hard fact shown at the start of every session (this folder's space, or with `--scope
global` every project), kept word for word and out of search results (docs/scopes-and-pins.md).

Exit status: 0 done, 1 the door failed (an unknown id, an id that is not a pin) or the machine is
unpaired, 2 bad input (an id that is not a memory id is refused before any request).
"""

from __future__ import annotations

from typing import Any

from bli_memory.commands.base import JSON_HELP, TAG_HELP, emit, new_parser, parse, usage_error, with_tools
from bli_memory.wire.contract import MAX_PIN_CHARS, WRITE_SCOPES


def pin_main(argv: list[str]) -> int:
    parser = new_parser(
        "pin",
        "Pin a hard fact: it is shown first at every session start in this folder's space (or,\n"
        "with --scope global, in every project), kept word for word, never merged or rewritten\n"
        f"by the librarian, and left out of search results. At most {MAX_PIN_CHARS} characters.",
        "examples:\n"
        "  bli-memory-mcp pin 'Never push to main; open a pull request'\n"
        "  bli-memory-mcp pin --scope global 'Answer in English, code comments in English'\n\n"
        "exit status: 0 pinned (or pinned already), 1 door failure or unpaired, 2 bad input",
    )
    parser.add_argument("text", nargs="+", metavar="TEXT", help="the fact (several words are joined)")
    parser.add_argument(
        "--scope",
        choices=WRITE_SCOPES,
        default="project",
        help="project (default): this folder's space; global: every project, for you alone",
    )
    parser.add_argument("--container-tag", metavar="TAG", help=TAG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    text = " ".join(args.text).strip()
    if not text:
        raise usage_error(parser.prog, "nothing to pin: TEXT is empty")
    if len(text) > MAX_PIN_CHARS:
        raise usage_error(parser.prog, f"a pin holds at most {MAX_PIN_CHARS} characters, got {len(text)}")
    arguments: dict[str, Any] = {"content": text, "scope": args.scope, "containerTag": args.container_tag}
    return with_tools(
        parser.prog, lambda tools: emit(parser.prog, tools.call("pin_memory", arguments), args.json)
    )


def pins_main(argv: list[str]) -> int:
    parser = new_parser(
        "pins",
        "List every pin that applies in this folder's space: the space's own, then your global\n"
        "ones, each with its id, age and full text.",
        "examples:\n  bli-memory-mcp pins\n  bli-memory-mcp pins --json\n\n"
        "exit status: 0 listed (none included), 1 door failure or unpaired, 2 bad input",
    )
    parser.add_argument("--container-tag", metavar="TAG", help=TAG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    arguments: dict[str, Any] = {"containerTag": args.container_tag}
    return with_tools(
        parser.prog, lambda tools: emit(parser.prog, tools.call("list_pins", arguments), args.json)
    )


def unpin_main(argv: list[str]) -> int:
    parser = new_parser(
        "unpin",
        "Stop showing a pin at every session start. It stays as an ordinary memory (searched, and\n"
        "reconciled by the librarian) under a new id, its pinned text kept as history; forget it\n"
        "with `bli-memory-mcp forget --id NEW_ID` when it is no longer true.",
        "examples:\n  bli-memory-mcp unpin mem_3f2c9a0b1d2e3f4a5b6c7d8e\n\n"
        "exit status: 0 unpinned, 1 unknown id / not a pin / door failure / unpaired, 2 bad input",
    )
    parser.add_argument("id", metavar="ID", help="the pin's id (from `bli-memory-mcp pins`)")
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    if not args.id.strip():
        raise usage_error(parser.prog, "ID must not be empty")
    arguments: dict[str, Any] = {"id": args.id.strip()}
    return with_tools(
        parser.prog, lambda tools: emit(parser.prog, tools.call("unpin_memory", arguments), args.json)
    )
