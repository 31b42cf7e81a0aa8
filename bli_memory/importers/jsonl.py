"""Our own export (`bli-memory-mcp export --format jsonl`): one memory row a line, with its history.

The first line is a header, `{"format": "bli-memory", "version": 1, ...}`; every other line is one
row (a version, current, superseded or forgotten) as the door's export endpoint gives it: `id,
rootId, previousVersionId, version, status, kind, containerTag, content, customId, metadata,
createdAt, updatedAt, supersededAt`, in the order the rows were written. Rows are checked here for
shape only; the door checks how they chain.
"""

from __future__ import annotations

import json
from typing import Any

from bli_memory.importers.records import FormatError, Parsed, decode_text, describe_json_error, lone_surrogate
from bli_memory.wire.contract import MEMORY_STATUSES

FORMAT_NAME = "bli-memory"
FORMAT_VERSION = 1
#: field -> the JSON types it may hold (None allowed where listed).
ROW_FIELDS: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "rootId": (str,),
    "previousVersionId": (str, type(None)),
    "version": (int,),
    "status": (str,),
    "kind": (str,),
    "containerTag": (str,),
    "content": (str,),
    "customId": (str, type(None)),
    "metadata": (dict, type(None)),
    "createdAt": (str,),
    "updatedAt": (str,),
    "supersededAt": (str, type(None)),
}
OPTIONAL_FIELDS = ("previousVersionId", "customId", "metadata", "supersededAt")


def parse(data: bytes) -> Parsed:
    parsed = Parsed()
    header_seen = False
    for number, line in enumerate(decode_text(data).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            parsed.skip(where, describe_json_error(exc))
            continue
        if not isinstance(row, dict):
            parsed.skip(where, "not a JSON object")
            continue
        if "format" in row and not header_seen:
            header_seen = True
            _check_header(row)
            continue
        problem = row_problem(row) or lone_surrogate(row)
        if problem is not None:
            parsed.skip(where, problem)
            continue
        parsed.rows.append((where, {name: row.get(name) for name in ROW_FIELDS}))
    return parsed


def _check_header(header: dict[str, Any]) -> None:
    if header.get("format") != FORMAT_NAME:
        raise FormatError(f"not a bli-memory export: the header names format {header.get('format')!r}")
    if header.get("version") != FORMAT_VERSION:
        raise FormatError(
            f"a bli-memory export of version {header.get('version')!r}; this version reads {FORMAT_VERSION}"
        )


def row_problem(row: dict[str, Any]) -> str | None:
    """What makes `row` not a row of our export, or None."""
    for name, types in ROW_FIELDS.items():
        if name not in row:
            if name in OPTIONAL_FIELDS:
                continue
            return f"no `{name}`"
        value = row[name]
        if isinstance(value, bool) or not isinstance(value, types):
            return f"`{name}` has the wrong type"
    if row["status"] not in MEMORY_STATUSES:
        return f"`status` must be one of {', '.join(MEMORY_STATUSES)}"
    if row["version"] < 1:
        return "`version` must be 1 or more"
    return None
