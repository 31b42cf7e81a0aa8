"""claude-mem: its JSON export, or its SQLite database (`~/.claude-mem/claude-mem.db`) read directly.

The export (`scripts/export-memories.ts`) is `{exportedAt, query, totalObservations, ..., observations,
sessions, summaries, prompts}`; its `observations` and `summaries` are rows of the database's
`observations` (`id, memory_session_id, project, type, title, subtitle, narrative, text, facts,
concepts, files_read, files_modified, created_at, created_at_epoch`) and `session_summaries` (`id,
memory_session_id, project, request, investigated, learned, completed, next_steps, notes, created_at,
created_at_epoch`) tables, which the database is read from the same way (read-only). One memory per
observation (its title, its narrative or text, then its facts as bullets) and per session summary
(its request, what was learned and completed, the next steps). Sessions and user prompts are not
memories and are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from bli_memory.importers.records import (
    FormatError,
    Item,
    Parsed,
    Record,
    array_items,
    decode_text,
    keyed_array,
    text_of,
)

SQLITE_MAGIC = b"SQLite format 3\x00"
#: `created_at_epoch` is in milliseconds (JavaScript's Date.now()); below this it is taken as seconds.
EPOCH_MS_ABOVE = 100_000_000_000
SUMMARY_FIELDS = (
    ("request", "Request"),
    ("investigated", "Investigated"),
    ("learned", "Learned"),
    ("completed", "Completed"),
    ("next_steps", "Next steps"),
    ("notes", "Notes"),
)


def parse(data: bytes) -> Parsed:
    """The JSON export."""
    text = decode_text(data)
    observations = keyed_array(text, "observations")
    summaries = keyed_array(text, "summaries")
    if observations is None and summaries is None:
        raise FormatError('not a claude-mem export: no "observations" or "summaries" list')
    parsed = Parsed()
    if observations is not None:
        for item in array_items(text, observations):
            _json_row("observations", item, parsed, observation)
    if summaries is not None:
        for item in array_items(text, summaries):
            _json_row("summaries", item, parsed, summary)
    prompts = keyed_array(text, "prompts")
    if prompts is not None:
        _left_out_prompts(len(array_items(text, prompts)), parsed)
    return parsed


def _json_row(section: str, item: Item, parsed: Parsed, read: Any) -> None:
    where = f"{section} {item.where}"
    if item.error is not None:
        parsed.skip(where, item.error)
    elif not isinstance(item.value, dict):
        parsed.skip(where, "not a JSON object")
    else:
        read(where, item.value, parsed)


def _left_out_prompts(count: int, parsed: Parsed) -> None:
    if count:
        noun = "user prompt" if count == 1 else "user prompts"
        parsed.skip("prompts", f"{count} {noun} left out (requests, not memories)", malformed=False)


def parse_database(path: str) -> Parsed:
    """The SQLite database, opened read-only: its observations and session summaries."""
    import sqlite3
    from pathlib import Path

    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise FormatError(f"cannot open the database read-only ({exc})") from None
    db.row_factory = sqlite3.Row
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "observations" not in tables and "session_summaries" not in tables:
            raise FormatError("not a claude-mem database: no observations or session_summaries table")
        parsed = Parsed()
        if "observations" in tables:
            rows = db.execute("SELECT * FROM observations ORDER BY id")
            _database_rows("observations", rows, parsed, observation)
        if "session_summaries" in tables:
            rows = db.execute("SELECT * FROM session_summaries ORDER BY id")
            _database_rows("session_summaries", rows, parsed, summary)
        if "user_prompts" in tables:
            _left_out_prompts(int(db.execute("SELECT count(*) FROM user_prompts").fetchone()[0]), parsed)
        return parsed
    except sqlite3.Error as exc:
        raise FormatError(f"cannot read the database ({exc})") from None
    finally:
        db.close()


def _database_rows(table: str, rows: Iterable[Any], parsed: Parsed, read: Any) -> None:
    for row in rows:
        values = dict(row)
        read(f"{table} row id {values.get('id')}", values, parsed)


def _created_at(row: Mapping[str, Any]) -> str | None:
    text = row.get("created_at")
    if isinstance(text, str) and text.strip():
        return text.strip()
    epoch = row.get("created_at_epoch")
    if isinstance(epoch, (int, float)) and not isinstance(epoch, bool) and epoch > 0:
        seconds = epoch / 1000 if epoch > EPOCH_MS_ABOVE else float(epoch)
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat()
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _facts(value: Any) -> list[str]:
    """`facts` is a JSON array of strings stored as text (or, in the export, sometimes the array)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return [value.strip()] if value.strip() else []
    if not isinstance(value, list):
        return []
    return [fact.strip() for fact in value if isinstance(fact, str) and fact.strip()]


def _row_id(row: Mapping[str, Any]) -> str | None:
    value = row.get("id")
    if isinstance(value, bool) or not isinstance(value, (int, str)) or str(value).strip() == "":
        return None
    return str(value)


def _common(row: Mapping[str, Any], kind: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"record": kind}
    for name, key in (("project", "project"), ("type", "type"), ("memory_session_id", "sessionId")):
        if isinstance(row.get(name), str) and row[name]:
            metadata[key] = row[name]
    return metadata


def observation(where: str, row: Mapping[str, Any], parsed: Parsed) -> None:
    """One observation row as a memory: title, narrative (or text), facts."""
    row_id = _row_id(row)
    if row_id is None:
        parsed.skip(where, "no `id`")
        return
    lines = [text for text in (text_of(row.get("title")), text_of(row.get("subtitle"))) if text]
    body = text_of(row.get("narrative")) or text_of(row.get("text"))
    if body:
        lines.append(body)
    lines += [f"- {fact}" for fact in _facts(row.get("facts"))]
    if not lines:
        parsed.skip(where, "an empty observation (no title, narrative, text or facts)", malformed=False)
        return
    parsed.records.append(
        Record(
            content="\n".join(lines),
            original_id=f"observation:{row_id}",
            created_at=_created_at(row),
            metadata=_common(row, "observation"),
        )
    )


def summary(where: str, row: Mapping[str, Any], parsed: Parsed) -> None:
    """One session summary row as a memory: each of its parts on a line of its own."""
    row_id = _row_id(row)
    if row_id is None:
        parsed.skip(where, "no `id`")
        return
    lines = [f"{label}: {text}" for name, label in SUMMARY_FIELDS if (text := text_of(row.get(name)))]
    if not lines:
        parsed.skip(where, "an empty summary", malformed=False)
        return
    parsed.records.append(
        Record(
            content="\n".join(lines),
            original_id=f"summary:{row_id}",
            created_at=_created_at(row),
            metadata=_common(row, "summary"),
        )
    )
