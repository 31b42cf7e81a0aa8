"""Agent instruction files: `CLAUDE.md`, `AGENTS.md`, `.cursorrules`, Claude Code's `MEMORY.md`.

Markdown (or plain text) read block by block: one memory per bullet (with its continuation and
nested lines) and per paragraph, kept as the file has it except a bullet's own marker (`- `, `1. `):
a memory is shown as a bullet of its own at session start, and "- - Never edit …" said the marker
twice. The key is still the block as written, so a file imported before keeps its keys (its bullets
come back `updated`). Headings are not memories: the nearest one above a block is kept in its
metadata (`section`). A YAML front matter block, horizontal rules and blank lines are left out; a
fenced code block stays inside the block it belongs to. A fence never closed loses its own block
(named as a problem), not the rest of the file.

Every rule is linear in a line's length: a heading's closing `#`s are cut in Python, not by a pattern
(`(.*?)\\s*#*\\s*$` took 476 s on a 12 KB line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bli_memory.importers.records import Parsed, Record, content_key, decode_text

_BULLET = re.compile(r"^ {0,1}(?:[-*+]|\d{1,9}[.)])\s+\S")
#: a bullet's marker and the spaces after it, cut from the memory's text (a task box `[ ]` stays).
_BULLET_MARKER = re.compile(r" {0,1}(?:[-*+]|\d{1,9}[.)])[ \t]+")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?=\s|$)")
_RULE = re.compile(r"^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass
class _Block:
    first_line: int
    section: str | None
    lines: list[str] = field(default_factory=list)
    bullet: bool = False
    #: the line of a fence opened in this block and never closed: the block is left out
    unclosed_fence: int | None = None


def parse(data: bytes, file_name: str) -> Parsed:
    """The blocks of one instruction file; `file_name` (its base name) is kept in each memory's
    metadata and in its key, so two files with the same sentence keep one memory each."""
    lines = decode_text(data).splitlines()
    start = _after_front_matter(lines)
    unclosed = _unclosed_fences(lines, start)
    parsed = Parsed()
    section: str | None = None
    block: _Block | None = None
    fence: str | None = None

    def close() -> None:
        nonlocal block
        if block is not None:
            _keep(block, file_name, parsed)
        block = None

    for index in range(start, len(lines)):
        line = lines[index]
        number = index + 1
        if fence is not None:  # inside a fenced code block: everything belongs to the block
            assert block is not None
            block.lines.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened and index not in unclosed:
            if block is None:
                block = _Block(number, section)
            block.lines.append(line)
            fence = opened.group(1)
            continue
        if not line.strip():
            close()
            continue
        if _HEADING.match(line):
            close()
            section = _heading_text(line) or None
            continue
        if _RULE.match(line):
            close()
            continue
        if _BULLET.match(line):
            close()
            block = _Block(number, section, bullet=True)
        elif block is None:
            block = _Block(number, section)
        if opened:  # a fence never closed: its line is read as text, and its block will be left out
            block.unclosed_fence = number
        block.lines.append(line)
    close()
    return parsed


def _unclosed_fences(lines: list[str], start: int) -> set[int]:
    """The indexes of the fence lines that open a block never closed (no later line starts with as
    many of the same character). Linear: the longest fence of each kind after every line is known
    from one pass backwards, and the forward pass skips each closed block whole."""
    longest_after = {"`": [0] * (len(lines) + 1), "~": [0] * (len(lines) + 1)}
    for index in range(len(lines) - 1, start - 1, -1):
        stripped = lines[index].strip()
        for char, longest in longest_after.items():
            run = len(stripped) - len(stripped.lstrip(char))
            longest[index] = max(run, longest[index + 1])
    unclosed: set[int] = set()
    index = start
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        index += 1
        if opened is None:
            continue
        fence = opened.group(1)
        if longest_after[fence[0]][index] < len(fence):
            unclosed.add(index - 1)
            continue
        while not lines[index].strip().startswith(fence):
            index += 1
        index += 1
    return unclosed


def _heading_text(line: str) -> str:
    """A heading's text without its `#`s (opening and closing) and the spaces around them."""
    text = line.lstrip(" ").lstrip("#")
    return text.strip().rstrip("#").strip()


def _after_front_matter(lines: list[str]) -> int:
    if not lines or lines[0].strip() != "---":
        return 0
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return index + 1
    return 0


def _keep(block: _Block, file_name: str, parsed: Parsed) -> None:
    written = "\n".join(block.lines).strip("\n")
    if not written.strip():
        return
    if block.unclosed_fence is not None:
        parsed.skip(
            f"line {block.first_line}",
            f"a code fence opened on line {block.unclosed_fence} is never closed; its block is left out",
        )
        return
    text = _BULLET_MARKER.sub("", written, count=1) if block.bullet else written
    metadata: dict[str, object] = {"file": file_name}
    if block.section:
        metadata["section"] = block.section
    parsed.records.append(
        Record(content=text, original_id=content_key(f"{file_name}\x00{written}"), metadata=dict(metadata))
    )
