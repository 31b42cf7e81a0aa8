"""SessionStart: put what this space knows in front of the model before the first prompt.

One call, `POST /api/memory/v4/profile`, rendered as `<bli-memory-context>` with a "User Profile"
(the durable facts: `profile.static` then `profile.dynamic`) and "Recent Context" (the latest
memories). An empty space prints nothing; a failure prints nothing and the receipt names why.
"""

from __future__ import annotations

import time

from bli_memory.hooks import door, receipt
from bli_memory.hooks.prompt import format_age, render_block

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from bli_memory.settings import Settings
    from bli_memory.wire.http import Connection

CONTEXT_TAG = "bli-memory-context"
PROFILE_MAX_ITEMS = 20
RECENT_MAX_ITEMS = 10
ITEM_MAX_CHARS = 600


def _text(item: object) -> str:
    """A profile entry may be a bare string or a memory row with `content`."""
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, dict):
        return str(item.get("content", "")).strip()
    return ""


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= ITEM_MAX_CHARS else flat[: ITEM_MAX_CHARS - 1] + "…"


def profile_facts(answer: dict[str, object]) -> list[str]:
    """Static facts first, then dynamic ones, de-duplicated, at most PROFILE_MAX_ITEMS."""
    profile = answer.get("profile")
    facts: list[str] = []
    if isinstance(profile, dict):
        for key in ("static", "dynamic"):
            items = profile.get(key)
            for item in items if isinstance(items, list) else []:
                text = _one_line(_text(item))
                if text and text not in facts:
                    facts.append(text)
    return facts[:PROFILE_MAX_ITEMS]


def recent_rows(answer: dict[str, object], facts: list[str]) -> list[object]:
    """The latest memories, minus any the profile already states word for word."""
    rows = answer.get("recent")
    if not isinstance(rows, list):
        return []
    known = set(facts)
    return [row for row in rows if _text(row) and _one_line(_text(row)) not in known][:RECENT_MAX_ITEMS]


def render_context(facts: list[str], recent: list[object], container_tag: str, now_s: float) -> str:
    lines = [f"What this space ({container_tag}) remembers, as of this session's start:"]
    if facts:
        lines += ["## User Profile"] + [f"- {fact}" for fact in facts]
    if recent:
        lines.append("## Recent Context")
        for row in recent:
            facets = []
            if isinstance(row, dict):
                facets.append(format_age(row.get("createdAt"), now_s))
                if row.get("id"):
                    facets.append(f"id {row['id']}")
            prefix = f"[{' · '.join(facets)}] " if facets else ""
            lines.append(f"- {prefix}{_one_line(_text(row))}")
    return render_block(CONTEXT_TAG, lines)


def answer(
    payload: dict[str, object],
    cwd: str,
    *,
    deadline: float,
    settings: Settings | None = None,
    connection: Connection | None = None,
) -> tuple[str, dict[str, object]]:
    """(stdout, outcome) for one session start; raises only for an internal failure."""
    settings = door.paired_settings(settings)
    if settings is None:
        return "", receipt.skipped("unpaired")
    from bli_memory.door_client import DoorCallError

    try:
        container_tag, found = door.call(
            settings, cwd, connection, lambda client, tag: client.profile(tag, deadline=deadline)
        )
    except DoorCallError as exc:
        return "", receipt.failed(exc.reason)
    if not isinstance(found, dict):
        return "", receipt.failed("bad_response")
    facts = profile_facts(found)
    recent = recent_rows(found, facts)
    outcome = receipt.ok(profile=len(facts), recent=len(recent))
    if not facts and not recent:
        return "", outcome
    return render_context(facts, recent, container_tag, time.time()), outcome
