"""Agent instruction files: `CLAUDE.md`, `AGENTS.md`, `.cursorrules`, Claude Code's `MEMORY.md`.

Markdown (or plain text) read block by block: one memory per bullet (with its continuation and
nested lines) and per paragraph, kept verbatim — the text as the file has it, bullet marker
included. Headings are not memories: the nearest one above a block is kept in its metadata
(`section`). A YAML front matter block, horizontal rules and blank lines are left out; a fenced code
block stays inside the block it belongs to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bli_memory.importers.records import Parsed, Record, content_key, decode_text

_BULLET = re.compile(r"^ {0,1}(?:[-*+]|\d{1,9}[.)])\s+\S")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s+|$)(.*?)\s*#*\s*$")
_RULE = re.compile(r"^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass
class _Block:
    first_line: int
    section: str | None
    lines: list[str] = field(default_factory=list)
    bullet: bool = False


def parse(data: bytes, file_name: str) -> Parsed:
    """The blocks of one instruction file; `file_name` (its base name) is kept in each memory's
    metadata and in its key, so two files with the same sentence keep one memory each."""
    lines = decode_text(data).splitlines()
    start = _after_front_matter(lines)
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
        if opened:
            if block is None:
                block = _Block(number, section)
            block.lines.append(line)
            fence = opened.group(1)
            continue
        if not line.strip():
            close()
            continue
        heading = _HEADING.match(line)
        if heading:
            close()
            section = heading.group(1).strip() or None
            continue
        if _RULE.match(line):
            close()
            continue
        if _BULLET.match(line):
            close()
            block = _Block(number, section, bullet=True)
        elif block is None:
            block = _Block(number, section)
        block.lines.append(line)
    close()
    return parsed


def _after_front_matter(lines: list[str]) -> int:
    if not lines or lines[0].strip() != "---":
        return 0
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return index + 1
    return 0


def _keep(block: _Block, file_name: str, parsed: Parsed) -> None:
    text = "\n".join(block.lines).strip("\n")
    if not text.strip():
        return
    metadata: dict[str, object] = {"file": file_name}
    if block.section:
        metadata["section"] = block.section
    parsed.records.append(
        Record(content=text, original_id=content_key(f"{file_name}\x00{text}"), metadata=dict(metadata))
    )
