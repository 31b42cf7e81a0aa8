"""SessionStart: put what this space knows in front of the model before the first prompt.

One call, `POST /api/memory/v4/profile`, rendered as `<bli-memory-context>` with "Pinned" first
(every pin of this space and of the person's global space, word for word, at most PINS_MAX_CHARS
characters of them; the rest are named in the block's last line), a "User Profile" (the briefing:
`profile.dynamic`, the lasting facts in force the door chose within its character budget, and
`profile.static` from a door that sends no `pins`) and "Recent Context" (the latest memories the
briefing does not already state, from this space and the global one). An empty space prints nothing; a failure
prints nothing and the receipt names why.
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
#: as many as the door's briefing holds at most (its PROFILE_BRIEFING_COUNT)
PROFILE_MAX_ITEMS = 40
RECENT_MAX_ITEMS = 10
ITEM_MAX_CHARS = 600
#: the pins shown together hold at most this many characters of text (the block holds 8000): the
#: pins that do not fit are counted in the block's last line, so pins never crowd out the rest.
PINS_MAX_CHARS = 3000
PINS_COMMAND = "bli-memory-mcp pins"


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


def pin_rows(answer: dict[str, object]) -> list[dict[str, object]]:
    """The door's pins (this space's, then the global ones) that have text."""
    rows = answer.get("pins")
    if not isinstance(rows, list):
        return []
    return [row for row in rows if isinstance(row, dict) and _text(row)]


def fit_pins(pins: list[dict[str, object]]) -> tuple[list[dict[str, object]], int]:
    """(the pins shown, how many are not): pins in the door's order while their texts fit in
    PINS_MAX_CHARS together; the first that does not fit and every one after it are left out."""
    used = 0
    for index, row in enumerate(pins):
        used += len(_text(row))
        if used > PINS_MAX_CHARS:
            return pins[:index], len(pins) - index
    return pins, 0


def pin_lines(pins: list[dict[str, object]]) -> list[str]:
    """Each pin word for word: `- [pin · global · id …] first line`, then its other lines indented."""
    lines: list[str] = []
    for row in pins:
        facets = ["pin"]
        if row.get("scope") == "global":
            facets.append("global")
        if row.get("id"):
            facets.append(f"id {row['id']}")
        body = _text(row).splitlines() or [""]
        lines.append(f"- [{' · '.join(facets)}] {body[0]}")
        lines += [f"  {line}" for line in body[1:]]
    return lines


def overflow_line(hidden: int) -> str | None:
    if not hidden:
        return None
    return f"… {hidden} more {'pin' if hidden == 1 else 'pins'} not shown: run `{PINS_COMMAND}`"


def profile_facts(answer: dict[str, object]) -> list[str]:
    """Static facts first, then dynamic ones, de-duplicated, at most PROFILE_MAX_ITEMS. A door that
    sends `pins` sends them in `static` too: they are shown as pins, not again here."""
    profile = answer.get("profile")
    facts: list[str] = []
    pinned = {_one_line(_text(row)) for row in pin_rows(answer)}
    if isinstance(profile, dict):
        for key in ("dynamic",) if "pins" in answer else ("static", "dynamic"):
            items = profile.get(key)
            for item in items if isinstance(items, list) else []:
                text = _one_line(_text(item))
                if text and text not in facts and text not in pinned:
                    facts.append(text)
    return facts[:PROFILE_MAX_ITEMS]


def recent_rows(answer: dict[str, object], facts: list[str]) -> list[object]:
    """The latest memories, minus any the profile already states word for word."""
    rows = answer.get("recent")
    if not isinstance(rows, list):
        return []
    known = set(facts)
    return [row for row in rows if _text(row) and _one_line(_text(row)) not in known][:RECENT_MAX_ITEMS]


def render_context(
    facts: list[str],
    recent: list[object],
    container_tag: str,
    now_s: float,
    pins: list[dict[str, object]] | None = None,
    hidden_pins: int = 0,
) -> str:
    lines = [f"What this space ({container_tag}) remembers, as of this session's start:"]
    if pins:
        lines += ["## Pinned (always true here; follow them)", *pin_lines(pins)]
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
                if row.get("scope") == "global":
                    facets.append("global")
            prefix = f"[{' · '.join(facets)}] " if facets else ""
            lines.append(f"- {prefix}{_one_line(_text(row))}")
    return render_block(CONTEXT_TAG, lines, last=overflow_line(hidden_pins))


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
    pins, hidden_pins = fit_pins(pin_rows(found))
    facts = profile_facts(found)
    recent = recent_rows(found, facts)
    outcome = receipt.ok(profile=len(facts), recent=len(recent), pins=len(pins))
    if not facts and not recent and not pins and not hidden_pins:
        return "", outcome
    text = render_context(facts, recent, container_tag, time.time(), pins, hidden_pins)
    return text, outcome
