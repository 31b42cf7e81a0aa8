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
from collections.abc import Mapping
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
#: a value of the database is read up to this many bytes (SQLite's length limit on the connection)...
MAX_VALUE_BYTES = 1024 * 1024
#: ... and all the values together up to this many; the rows past it are named as left out.
MAX_TOTAL_BYTES = 256 * 1024 * 1024
#: `PRAGMA table_xinfo`'s `hidden` of a generated column (virtual, stored): its value is computed on
#: reading, to any size, so it is never read.
GENERATED_COLUMN = (2, 3)
SUMMARY_FIELDS = (
    ("request", "Request"),
    ("investigated", "Investigated"),
    ("learned", "Learned"),
    ("completed", "Completed"),
    ("next_steps", "Next steps"),
    ("notes", "Notes"),
)

#: the columns a memory is built from (`SELECT *` would also compute a generated column of any size).
_ROW_COLUMNS = ("id", "memory_session_id", "project", "type", "created_at", "created_at_epoch")
OBSERVATION_COLUMNS = (*_ROW_COLUMNS, "title", "subtitle", "narrative", "text", "facts")
SUMMARY_COLUMNS = (*_ROW_COLUMNS, *(name for name, _ in SUMMARY_FIELDS))


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
    """The SQLite database, opened read-only: its observations and session summaries.

    Only the stored columns a memory is built from are read (a generated column grew an 8 KB file
    into 6.4 GB), row by row, each value up to `MAX_VALUE_BYTES` and all of them up to
    `MAX_TOTAL_BYTES`; a row with a value too long or not UTF-8 is named and left out, and the
    others are read."""
    import sqlite3
    from pathlib import Path

    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise FormatError(f"cannot open the database read-only ({exc})") from None
    if hasattr(db, "setlimit"):  # Python 3.11+: SQLite itself refuses to build a longer value
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES + 1)  # type: ignore[attr-defined,unused-ignore]
    db.text_factory = bytes  # decoded value by value: one value not UTF-8 costs its row alone
    try:
        tables = {_text(row[0]) for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "observations" not in tables and "session_summaries" not in tables:
            raise FormatError("not a claude-mem database: no observations or session_summaries table")
        parsed = Parsed()
        budget = [MAX_TOTAL_BYTES]
        if "observations" in tables:
            _database_rows(db, "observations", OBSERVATION_COLUMNS, parsed, observation, budget)
        if "session_summaries" in tables:
            _database_rows(db, "session_summaries", SUMMARY_COLUMNS, parsed, summary, budget)
        if "user_prompts" in tables:
            _left_out_prompts(int(db.execute("SELECT count(*) FROM user_prompts").fetchone()[0]), parsed)
        return parsed
    except sqlite3.Error as exc:
        raise FormatError(f"cannot read the database ({exc})") from None
    finally:
        db.close()


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _database_rows(
    db: Any, table: str, wanted: tuple[str, ...], parsed: Parsed, read: Any, budget: list[int]
) -> None:
    """The rows of `table`, one query each, so that a row SQLite cannot give (a value past the
    length limit) is named and the next one read."""
    import sqlite3

    # (cid, name, type, notnull, default, pk, hidden): hidden 2 or 3 is a generated column
    info = {_text(row[1]): row[6] for row in db.execute(f"PRAGMA table_xinfo({table})")}
    generated = [name for name in wanted if info.get(name) in GENERATED_COLUMN]
    if generated:
        names = ", ".join(f"`{name}`" for name in generated)
        parsed.skip(table, f"{names} computed by SQLite (a generated column), not stored: not read")
    columns = [name for name in wanted if name in info and name not in generated]
    if "id" not in columns:
        raise FormatError(f"not a claude-mem database: {table} has no id column")
    query = f"SELECT {', '.join(columns)} FROM {table} WHERE rowid = ?"
    for rowid, row_id in db.execute(f"SELECT rowid, id FROM {table} ORDER BY id").fetchall():
        where = f"{table} row id {_text(row_id)}"
        if budget[0] <= 0:
            parsed.skip(
                table, f"more than {MAX_TOTAL_BYTES} bytes of text; the rows from {where} on are left out"
            )
            return
        try:
            found = db.execute(query, (rowid,)).fetchone()
        except sqlite3.DataError:
            parsed.skip(where, f"a value is longer than {MAX_VALUE_BYTES} bytes; the row is left out")
            continue
        values: dict[str, Any] = {}
        for name, value in zip(columns, found, strict=True):
            if isinstance(value, bytes):
                budget[0] -= len(value)
                if len(value) > MAX_VALUE_BYTES:
                    parsed.skip(where, f"a value is longer than {MAX_VALUE_BYTES} bytes; the row is left out")
                    break
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError as exc:
                    parsed.skip(where, f"`{name}` is not UTF-8 text (byte {exc.start}); the row is left out")
                    break
            values[name] = value
        else:
            read(where, values, parsed)


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
