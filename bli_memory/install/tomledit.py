"""Codex's config.toml: our `[mcp_servers.bli-memory]` table, rendered and edited in place.

The standard library has no TOML writer (and Python 3.10 no reader), so this is a small line scanner:
`scan_toml` splits the text into statements with their full key paths, tracking strings (basic,
literal, multi-line) and bracket nesting so that a `[` inside a value is never taken for a table
header, and `edit_codex_toml` sets or removes our table while every other byte stays as it was.
Whatever the scanner cannot read safely raises TomlShapeError. `bli_memory.install.codex_trust` reads Codex's
hook trust with the same scanner.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bli_memory.install.contract import BIN_NAME, SERVER_ID


def toml_string(value: str) -> str:
    """A TOML basic string: quote, backslash and control characters escaped, nothing else."""
    named = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = []
    for char in value:
        if char in named:
            out.append(named[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def codex_server_lines(prefix: Sequence[str]) -> tuple[str, str]:
    """The two keys this installer owns in `[mcp_servers.bli-memory]`."""
    args = ", ".join(toml_string(arg) for arg in prefix[1:])
    return f"command = {toml_string(prefix[0])}", f"args = [{args}]"


def codex_toml_block(prefix: Sequence[str] = (BIN_NAME,)) -> str:
    """Our whole table, as `--print-config=codex` prints it."""
    command, args = codex_server_lines(prefix)
    return f"[mcp_servers.{SERVER_ID}]\n{command}\n{args}\n"


@dataclass(frozen=True)
class TomlStatement:
    """One logical statement of a TOML file: lines [start, end) and the key path it defines."""

    kind: str  # "header" | "keyval" | "trivia"
    start: int
    end: int
    path: tuple[str, ...] = ()
    array: bool = False
    table: tuple[str, ...] = ()  # the table a keyval sits in


_BARE_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\", "e": "\x1b"}


class TomlShapeError(ValueError):
    """The text is not TOML this editor can read safely."""


def parse_key(text: str, pos: int) -> tuple[tuple[str, ...], int]:
    """A dotted key starting at pos (after whitespace); returns its parts and the position after it."""
    parts: list[str] = []
    while True:
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos >= len(text):
            raise TomlShapeError("key expected")
        char = text[pos]
        if char == '"':
            value, pos = parse_basic_string(text, pos)
        elif char == "'":
            end = text.find("'", pos + 1)
            if end < 0 or "\n" in text[pos:end]:
                raise TomlShapeError("unterminated literal key")
            value, pos = text[pos + 1 : end], end + 1
        else:
            start = pos
            while pos < len(text) and text[pos] in _BARE_KEY_CHARS:
                pos += 1
            if pos == start:
                raise TomlShapeError("key expected")
            value = text[start:pos]
        parts.append(value)
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos < len(text) and text[pos] == ".":
            pos += 1
            continue
        return tuple(parts), pos


def parse_basic_string(text: str, pos: int) -> tuple[str, int]:
    """The value of the basic string whose opening quote is at pos, and the position after it."""
    out: list[str] = []
    index = pos + 1
    while index < len(text):
        char = text[index]
        if char == '"':
            return "".join(out), index + 1
        if char == "\n":
            break
        if char == "\\":
            code = text[index + 1 : index + 2]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                index += 2
                continue
            width = {"u": 4, "U": 8, "x": 2}.get(code)
            digits = text[index + 2 : index + 2 + (width or 0)]
            if not width or len(digits) != width:
                raise TomlShapeError("bad escape")
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise TomlShapeError("bad escape") from None
            index += 2 + width
            continue
        out.append(char)
        index += 1
    raise TomlShapeError("unterminated string")


def _skip_value(lines: Sequence[str], line: int, pos: int) -> int:
    """Scan a value that starts at (line, pos); returns the index one past its last line.

    Tracks strings (basic, literal, multi-line) and bracket nesting, so a `[` inside a string or a
    multi-line array is never taken for a table header.
    """
    stack: list[str] = []
    text = lines[line]
    multi: str | None = None
    while True:
        if pos >= len(text):
            if multi is None and not stack:
                return line + 1
            line += 1
            if line >= len(lines):
                raise TomlShapeError("unterminated value at end of file")
            text, pos = lines[line], 0
            continue
        char = text[pos]
        if multi is not None:
            if multi == '"""' and char == "\\":
                pos += 2
                continue
            if text.startswith(multi, pos):
                pos += 3
                while pos < len(text) and text[pos] == multi[0]:
                    pos += 1
                multi = None
                continue
            pos += 1
            continue
        if char == "#":
            pos = len(text)
        elif text.startswith('"""', pos) or text.startswith("'''", pos):
            multi = text[pos : pos + 3]
            pos += 3
        elif char == '"':
            _, pos = parse_basic_string(text, pos)
        elif char == "'":
            end = text.find("'", pos + 1)
            if end < 0:
                raise TomlShapeError("unterminated literal string")
            pos = end + 1
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
            pos += 1
        elif char in "]}":
            if not stack or stack.pop() != char:
                raise TomlShapeError("unbalanced brackets")
            pos += 1
        else:
            pos += 1


def scan_toml(text: str) -> list[TomlStatement]:
    """Split TOML text into statements, with full key paths; raises TomlShapeError on what it cannot read."""
    lines = text.splitlines(keepends=True)
    statements: list[TomlStatement] = []
    table: tuple[str, ...] = ()
    index = 0
    while index < len(lines):
        line = lines[index]
        body = line.lstrip(" \t")
        offset = len(line) - len(body)
        if not body.strip() or body.startswith("#"):
            statements.append(TomlStatement("trivia", index, index + 1))
            index += 1
            continue
        if body.startswith("["):
            array = body.startswith("[[")
            path, pos = parse_key(line, offset + (2 if array else 1))
            closing = "]]" if array else "]"
            if not line.startswith(closing, pos):
                raise TomlShapeError(f"bad table header on line {index + 1}")
            rest = line[pos + len(closing) :].strip()
            if rest and not rest.startswith("#"):
                raise TomlShapeError(f"text after a table header on line {index + 1}")
            table = path
            statements.append(TomlStatement("header", index, index + 1, path, array))
            index += 1
            continue
        key, pos = parse_key(line, offset)
        if not line.startswith("=", pos):
            raise TomlShapeError(f"'=' expected on line {index + 1}")
        end = _skip_value(lines, index, pos + 1)
        statements.append(TomlStatement("keyval", index, end, table + key, table=table))
        index = end
    return statements


def toml_loads(text: str) -> dict[str, Any] | None:
    """Parse with tomllib where the interpreter has it (3.11+); None on 3.10, where the scanner is the guard."""
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise TomlShapeError(str(exc)) from None
        except RecursionError:  # arrays or inline tables nested past the interpreter's limit
            raise TomlShapeError("nested too deep to read") from None
    return None


def edit_codex_toml(text: str, prefix: Sequence[str] | None) -> tuple[str, list[str]]:
    """Set (or, prefix None, remove) `[mcp_servers.bli-memory]`; every other byte stays as it was."""
    ours = ("mcp_servers", SERVER_ID)
    newline = "\r\n" if "\r\n" in text else "\n"
    statements = scan_toml(text)
    lines = text.splitlines(keepends=True)
    headers = [s for s in statements if s.kind == "header"]
    main = [s for s in headers if s.path == ours and not s.array]
    for statement in statements:
        inside_ours_header = statement.table[:2] == ours
        defines_ours = statement.path[:2] == ours and not (statement.kind == "keyval" and inside_ours_header)
        shadows_ours = statement.kind == "keyval" and len(statement.path) < 2 and statement.path == ours[:1]
        if (defines_ours and (statement.kind == "keyval" or statement.array)) or shadows_ours:
            raise TomlShapeError(f"mcp_servers.{SERVER_ID} is written in a form this installer does not edit")
        if statement.kind == "header" and statement.array and statement.path == ours[:1]:
            raise TomlShapeError("mcp_servers is an array of tables")
    if len(main) > 1:
        raise TomlShapeError(f"[mcp_servers.{SERVER_ID}] is defined twice")

    if prefix is None:
        blocks = [s for s in headers if s.path[:2] == ours]
        if not blocks:
            return text, []
        return _without_blocks(lines, statements, blocks), [f"remove [mcp_servers.{SERVER_ID}]"]

    command, args = codex_server_lines(prefix)
    if not main:
        head = text
        if head and not head.endswith(("\n", "\r")):
            head += newline
        if head.strip() and not head.endswith(newline * 2):
            head += newline
        block = f"[mcp_servers.{SERVER_ID}]{newline}{command}{newline}{args}{newline}"
        return head + block, [f"add [mcp_servers.{SERVER_ID}] ({shlex.join(prefix)})"]

    header = main[0]
    end = _block_end(statements, header)
    body = [s for s in statements if header.start < s.start < end and s.kind == "keyval"]
    new_lines = list(lines)
    wanted = {("command",): command, ("args",): args}
    missing = []
    changed = False
    for key, rendered in wanted.items():
        found = [s for s in body if s.path[2:] == key]
        if not found:
            missing.append(rendered + newline)
            continue
        first = found[0]
        old = "".join(lines[first.start : first.end])
        if old.strip() != rendered:
            changed = True
            new_lines[first.start] = rendered + newline
            for number in range(first.start + 1, first.end):
                new_lines[number] = ""
    if missing:
        changed = True
        header_line = new_lines[header.start]
        if not header_line.endswith(("\n", "\r")):  # the header was the file's last line
            header_line += newline
        new_lines[header.start] = header_line + "".join(missing)
    if not changed:
        return text, []
    return "".join(new_lines), [f"update [mcp_servers.{SERVER_ID}] ({shlex.join(prefix)})"]


def _without_blocks(
    lines: Sequence[str], statements: Sequence[TomlStatement], blocks: Sequence[TomlStatement]
) -> str:
    """The text without the tables whose headers are `blocks`, each with the blank line before it (or,
    at the top, the one after it): install put one there, and Codex one before each table it adds."""
    drop: set[int] = set()
    for header in blocks:
        end = _block_end(statements, header)
        drop.update(range(header.start, end))
        if header.start > 0 and not lines[header.start - 1].strip():
            drop.add(header.start - 1)
        elif header.start == 0 and end < len(lines) and not lines[end].strip():
            drop.add(end)
    return "".join(line for number, line in enumerate(lines) if number not in drop)


#: where Codex keeps a hook's trust: `[hooks.state."<hooks.json>:<event>:<group>:<handler>"]`.
HOOK_STATE_TABLE = ("hooks", "state")


def remove_hook_states(text: str, keys: Sequence[str]) -> tuple[str, list[str]]:
    """Remove the `[hooks.state."<key>"]` tables of `keys` (Codex's record of our hooks' trust): (the
    new text, the keys removed, sorted); every other byte stays as it was. A state written in another
    form (a dotted key, an inline table) is not how Codex writes one and is left alone."""
    wanted = {(*HOOK_STATE_TABLE, key) for key in keys}
    statements = scan_toml(text)
    blocks = [s for s in statements if s.kind == "header" and not s.array and s.path in wanted]
    if not blocks:
        return text, []
    removed = sorted(header.path[-1] for header in blocks)
    return _without_blocks(text.splitlines(keepends=True), statements, blocks), removed


def without_hook_states(data: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """A parsed config without the hook states of `keys`, and without a `hooks.state` or `hooks`
    table left empty (the parsed form `remove_hook_states` must give, whatever it held before)."""
    import copy

    result = copy.deepcopy(data)
    hooks = result.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    if isinstance(hooks, dict) and isinstance(state, dict):
        for key in keys:
            state.pop(key, None)
        if not state:
            del hooks["state"]
        if not hooks:
            del result["hooks"]
    return result


def _block_end(statements: Sequence[TomlStatement], header: TomlStatement) -> int:
    """One past the last key line of a table; trailing comments and blanks belong to what follows."""
    end = header.end
    for statement in statements:
        if statement.start < header.end:
            continue
        if statement.kind == "header":
            break
        if statement.kind == "keyval":
            end = statement.end
    return end


def expected_after(old: dict[str, Any], prefix: Sequence[str] | None) -> dict[str, Any]:
    """The parsed config an edit must give: `old` with our table set (or, prefix None, removed)."""
    import copy  # only where tomllib exists to check the edit against

    expected = copy.deepcopy(old)
    servers = expected.setdefault("mcp_servers", {})
    if prefix is None:
        servers.pop(SERVER_ID, None)
        if not servers:
            del expected["mcp_servers"]
    else:
        servers.setdefault(SERVER_ID, {}).update({"command": prefix[0], "args": list(prefix[1:])})
    return expected
