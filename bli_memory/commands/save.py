"""`bli-memory-mcp save TEXT`: the save_memory tool for people and scripts.

Exit status: 0 saved (or queued with --extract), 1 the door failed or the machine is unpaired,
2 bad input.
"""

from __future__ import annotations

import sys
from typing import Any

from bli_memory.commands.base import JSON_HELP, TAG_HELP, emit, new_parser, parse, usage_error, with_tools
from bli_memory.wire.contract import WRITE_SCOPES

#: text read with --stdin is capped here; the door has its own, smaller cap and says so.
STDIN_MAX_BYTES = 1024 * 1024


def main(argv: list[str]) -> int:
    parser = new_parser(
        "save",
        "Remember a piece of text in this folder's space: a decision and why, a convention,\n"
        "a fact about the code. The answer names the space it landed in.",
        "examples:\n"
        "  bli-memory-mcp save 'We pin numpy < 2 because onnxruntime 1.17 breaks on it'\n"
        "  bli-memory-mcp save --custom-id release-owner 'Ana owns releases'\n"
        "  bli-memory-mcp save --scope global 'I prefer pytest over unittest'\n"
        "  git log -1 --format=%B | bli-memory-mcp save --stdin --extract\n\n"
        "exit status: 0 saved or queued, 1 door failure or unpaired, 2 bad input",
    )
    parser.add_argument(
        "text", nargs="*", metavar="TEXT", help="the text to remember (several words are joined)"
    )
    parser.add_argument("--stdin", action="store_true", help="read the text from stdin instead")
    parser.add_argument(
        "--custom-id", metavar="KEY", help="your own key: saving with it again replaces the memory"
    )
    parser.add_argument(
        "--extract",
        action="store_true",
        help="let the door distil atomic facts from the text (answered as queued)",
    )
    parser.add_argument(
        "--scope",
        choices=WRITE_SCOPES,
        default="project",
        help="project (default): this folder's space; global: your own space for facts that hold "
        "in every project",
    )
    parser.add_argument("--container-tag", metavar="TAG", help=TAG_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    args = parse(parser, argv)
    if isinstance(args, int):
        return args
    if args.stdin and args.text:
        raise usage_error(parser.prog, "give TEXT or --stdin, not both")
    if args.stdin:
        raw = sys.stdin.buffer.read(STDIN_MAX_BYTES + 1)
        if len(raw) > STDIN_MAX_BYTES:
            raise usage_error(parser.prog, f"stdin holds more than {STDIN_MAX_BYTES} bytes")
        text = raw.decode("utf-8", errors="replace")
    else:
        text = " ".join(args.text)
    if not text.strip():
        raise usage_error(parser.prog, "nothing to save: TEXT is empty")
    arguments: dict[str, Any] = {
        "content": text.strip(),
        "customId": args.custom_id,
        "extract": args.extract,
        "containerTag": args.container_tag,
        "scope": args.scope,
    }
    return with_tools(
        parser.prog, lambda tools: emit(parser.prog, tools.call("save_memory", arguments), args.json)
    )
