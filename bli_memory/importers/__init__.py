"""Readers of other memory tools' files, one module per format (docs/import.md).

Each is a pure function from a file to `records.Parsed` — standard library only, no door — so tests
drive them directly; the `import` command (`commands/importing.py`) redacts what they read, keys it
and saves it. `read(format, path)` picks the reader.
"""

from __future__ import annotations

import os

from bli_memory.importers.records import FormatError, Parsed

#: format name -> one line for --help.
FORMATS: dict[str, str] = {
    "mem0": "mem0 get_all JSON (a list or {results}) or an OpenMemory export zip",
    "supermemory": "Supermemory documents JSON ({memories} from documents.list, or {documents})",
    "claude-mem": "claude-mem's JSON export or its SQLite database (claude-mem.db)",
    "mcp-memory": "the MCP reference memory server's memory.jsonl (entities, relations)",
    "instructions": "CLAUDE.md, AGENTS.md, .cursorrules, MEMORY.md: one memory per bullet or paragraph",
    "jsonl": "bli-memory's own export (export --format jsonl), history included",
}
#: files larger than this are refused before reading (a memory tool's export is far smaller).
MAX_FILE_BYTES = 512 * 1024 * 1024


def read(fmt: str, path: str) -> Parsed:
    """The records of the file at `path` in format `fmt`. Raises FormatError (one line) when the file
    as a whole cannot be read as that format, OSError when it cannot be read at all."""
    if fmt not in FORMATS:
        raise FormatError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    if os.path.getsize(path) > MAX_FILE_BYTES:
        raise FormatError(f"the file is larger than {MAX_FILE_BYTES} bytes")
    if fmt == "claude-mem":
        from bli_memory.importers import claude_mem

        with open(path, "rb") as opened:
            head = opened.read(len(claude_mem.SQLITE_MAGIC))
        if head == claude_mem.SQLITE_MAGIC:
            return claude_mem.parse_database(path)
    with open(path, "rb") as opened:
        data = opened.read()
    if fmt == "mem0":
        from bli_memory.importers import mem0

        return mem0.parse(data)
    if fmt == "supermemory":
        from bli_memory.importers import supermemory

        return supermemory.parse(data)
    if fmt == "claude-mem":
        from bli_memory.importers import claude_mem

        return claude_mem.parse(data)
    if fmt == "mcp-memory":
        from bli_memory.importers import mcp_memory

        return mcp_memory.parse(data)
    if fmt == "instructions":
        from bli_memory.importers import instructions

        return instructions.parse(data, os.path.basename(path))
    from bli_memory.importers import jsonl

    return jsonl.parse(data)


__all__ = ["FORMATS", "FormatError", "Parsed", "read"]
