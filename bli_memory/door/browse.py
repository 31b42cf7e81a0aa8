"""Browsing a space: its current memories newest first, in pages that an opaque cursor continues.

The order is the store's `page_current` order, (last change, id) descending, and the cursor is that
pair for the last row of a page (a keyset, never an offset): a memory saved, updated or forgotten
while a person pages neither repeats a row nor shifts the next page. Pinned memories are not listed
here (they have their own list), stored exchanges are (as documents, marked as exchanges).

The cursor is opaque to clients: `c1.` and the base64url of the JSON pair. A cursor this door could
not have given is a 400, never a page of something else.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bli_memory.door import exchanges
from bli_memory.door.errors import InvalidRequest
from bli_memory.door.model import MAX_ID_CHARS, Memory, Principal, iso

if TYPE_CHECKING:
    from bli_memory.door.memories import MemoryService
    from bli_memory.door.store.base import BrowseRow

CURSOR_PREFIX = "c1."
#: a cursor is a number and an id: anything much longer was not made here.
MAX_CURSOR_CHARS = 4 * MAX_ID_CHARS
#: the two kinds a row is shown as: a remembered fact, or a document (a stored exchange is one).
FACT = "fact"
DOCUMENT = "document"


@dataclass(frozen=True)
class Page:
    """One page of a space: its rows, the cursor of the next page (None on the last), the tags read."""

    rows: list[BrowseRow]
    next_cursor: str | None
    tags: list[str]
    #: the space asked for (the request's `containerTag`), what was read, and the reader's global tag
    asked: str = ""
    scope: str = "project"
    global_tag: str | None = None


def encode_cursor(memory: Memory) -> str:
    raw = json.dumps([memory.updated_at, memory.id], separators=(",", ":")).encode("utf-8")
    return CURSOR_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """The (updated_at, id) a cursor continues after; InvalidRequest when this door did not make it."""
    problem = InvalidRequest("cursor: not a cursor this door gave (pass nextCursor as it came)")
    if not cursor.startswith(CURSOR_PREFIX) or len(cursor) > MAX_CURSOR_CHARS:
        raise problem
    body = cursor[len(CURSOR_PREFIX) :]
    try:
        value = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8"))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise problem from None
    if not (isinstance(value, list) and len(value) == 2):
        raise problem
    moment, memory_id = value
    if isinstance(moment, bool) or not isinstance(moment, (int, float)) or not math.isfinite(moment):
        raise problem
    if not isinstance(memory_id, str) or not 0 < len(memory_id) <= MAX_ID_CHARS:
        raise problem
    return float(moment), memory_id


def browse(
    memories: MemoryService,
    principal: Principal,
    tag: str,
    limit: int,
    cursor: str | None = None,
    scope: str = "project",
) -> Page:
    """Up to `limit` current memories of `tag`'s space (`scope` project), the caller's global space
    (global) or both as one list (all), newest first, after `cursor` when given."""
    before = None if cursor is None else decode_cursor(cursor)
    tags = memories.scope_tags(principal, tag, scope)
    rows = memories.store.page_current(principal.team_id, tags, limit + 1, before)
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(
        rows=rows,
        next_cursor=encode_cursor(rows[-1].memory) if more and rows else None,
        tags=tags,
        asked=tag,
        scope=scope,
        global_tag=memories.global_tag(principal),
    )


def kind_of(memory: Memory) -> str:
    return FACT if memory.kind == "memory" else DOCUMENT


def row_json(row: BrowseRow, global_tag: str | None = None) -> dict[str, Any]:
    """A listed memory: id, text, kind (fact or document), scope (project or the reader's global
    space), times and where it came from."""
    memory = row.memory
    metadata = memory.metadata if isinstance(memory.metadata, dict) else {}
    origin = metadata.get("source")
    body: dict[str, Any] = {
        "id": memory.id,
        "content": memory.content,
        "kind": kind_of(memory),
        "exchange": exchanges.is_exchange(memory.kind, memory.custom_id, memory.metadata),
        "containerTag": memory.container_tag,
        "scope": "global" if memory.container_tag == global_tag else "project",
        "createdAt": iso(memory.created_at),
        "updatedAt": iso(memory.updated_at),
        "version": memory.version,
        "source": {
            "origin": origin if isinstance(origin, str) else None,
            "person": memory.person,
            "device": row.device_id,
        },
    }
    if memory.custom_id is not None:
        body["customId"] = memory.custom_id
    return body


def page_json(page: Page) -> dict[str, Any]:
    return {
        "memories": [row_json(row, page.global_tag) for row in page.rows],
        "nextCursor": page.next_cursor,
        "containerTag": page.asked if page.scope == "global" else page.tags[0],
        "scope": page.scope,
        "searched": [tag for tag in page.tags if tag != page.global_tag],
    }
