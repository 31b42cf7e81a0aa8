"""UserPromptSubmit: recall what this space remembers about the prompt, before the model starts.

Order matters for cost: the trivial-prompt rule runs first on the text alone (no settings, no door),
then pairing, then one search (top 5, similarity ≥ 0.55; a row without a similarity only when it
contains an identifier the prompt names, see `recalled_rows`). Zero hits prints nothing — the model must
never reason about a "no memories" line, which would read the same as an unreachable store. A
failed recall is silent on stdout too: the receipt on stderr says why.

The door keeps each exchange the Stop hook sent as a stored exchange (kind `document`) beside the
facts distilled from it. The block prefers facts: a stored exchange is shown only when no fact from it
is already shown (`prefer_facts`), so a turn the librarian missed is still recalled, and one it
distilled is not shown twice.

The block (and session-start's, which reuses `render_block`) carries this store's marker `[bli]` on
every line, so the live A/B (this store against another memory store, both answering the same agents)
can tell whose recall an agent saw.
"""

from __future__ import annotations

import time

from bli_memory.hooks import door, receipt
from bli_memory.hooks.transcript import clip_utf8
from bli_memory.hooks.trivial import identifiers
from bli_memory.secret_scan import might_hold_secret
from bli_memory.wire.contract import EXCHANGE_FACTS_FIELD, FACT_EXCHANGE_FIELD

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from bli_memory.settings import Settings
    from bli_memory.wire.http import Connection

MARKER = "[bli]"
RECALL_TAG = "bli-memory-recall"
RECALL_LIMIT = 5
RECALL_MIN_SIMILARITY = 0.55
#: the door embeds the query; a pasted 50 KB log is not a better query than its first 4 KB.
QUERY_MAX_BYTES = 4 * 1024
#: the part of a long prompt the redactor sees before the query is clipped to QUERY_MAX_BYTES: more than
#: is sent, so a secret that straddles QUERY_MAX_BYTES is whole when it is judged (a token cut short
#: may no longer look like one, and its first half would leave the machine)
REDACT_WINDOW_BYTES = 2 * QUERY_MAX_BYTES
#: when the prompt was longer than the window, this much of the window's end is never sent, whatever
#: masks shortened before it: a secret cut by the window may be there (the longest minimum any detector
#: needs to recognise a token is under 100 characters)
WINDOW_EDGE_CHARS = 1024
#: Claude Code caps injected text at 10,000 characters (then replaces it by a file path).
BLOCK_MAX_CHARS = 8000
ITEM_MAX_CHARS = 1200

_HOUR_S = 3600.0
_DAY_S = 86400.0


def _parse_epoch_s(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if not isinstance(value, str) or not value.strip():
        return None
    from datetime import datetime, timezone  # only when there is a row to date

    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


def format_age(created_at: object, now_s: float) -> str:
    """`<1h`, `5h`, `3d`, `2mo`, `1y`, or `?` — the same scale as the MCP tool output."""
    when = _parse_epoch_s(created_at)
    if when is None:
        return "?"
    elapsed_s = now_s - when
    if elapsed_s < _HOUR_S:
        return "<1h"
    if elapsed_s < _DAY_S:
        return f"{int(elapsed_s // _HOUR_S)}h"
    days = int(elapsed_s // _DAY_S)
    if days < 30:
        return f"{days}d"
    if days < 365:
        return f"{days // 30}mo"
    return f"{days // 365}y"


def _neutralise(text: str) -> str:
    """A memory must not be able to close (or open) our block early."""
    return text.replace("</bli-memory", "‹/bli-memory").replace("<bli-memory", "‹bli-memory")


def _clip_chars(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_block(tag: str, lines: list[str], last: str | None = None) -> str:
    """`<tag> [bli]`, each line prefixed by the marker, `</tag> [bli]`; cut whole lines to fit.

    `last`, when given, is the block's last line whatever is cut: its room is kept from the start."""
    out = [f"<{tag}> {MARKER}"]
    closing = f"</{tag}> {MARKER}"
    final = None if last is None else f"{MARKER} {_neutralise(last)}"
    used = len(out[0]) + len(closing) + 2 + (0 if final is None else len(final) + 1)
    for line in lines:
        marked = f"{MARKER} {_neutralise(line)}" if line else MARKER
        if used + len(marked) + 1 > BLOCK_MAX_CHARS:
            out.append(f"{MARKER} […]")
            break
        out.append(marked)
        used += len(marked) + 1
    if final is not None:
        out.append(final)
    out.append(closing)
    return "\n".join(out) + "\n"


def item_lines(index: int, row: dict[str, object], now_s: float) -> list[str]:
    """One remembered item: `1. [3d · cosine similarity 0.81 · id …]` then its text, indented."""
    facets = [format_age(row.get("createdAt"), now_s)]
    similarity = row.get("similarity")
    if isinstance(similarity, (int, float)) and not isinstance(similarity, bool):
        facets.append(f"cosine similarity {float(similarity):.2f}")
    if row.get("kind", "memory") != "memory":
        facets.append(str(row.get("kind")))
    if row.get("scope") == "global":  # the door searches this space and the person's global one
        facets.append("global")
    if row.get("id"):
        facets.append(f"id {row['id']}")
    content = _clip_chars(str(row.get("content", "")).strip(), ITEM_MAX_CHARS)
    body = content.splitlines() or [""]
    return [f"{index}. [{' · '.join(facets)}] {body[0]}"] + [f"   {line}" for line in body[1:]]


def recalled_rows(
    answer: dict[str, object], prompt_identifiers: list[str] | None = None
) -> list[dict[str, object]]:
    """The door's results that clear the floor: at most the top 5, each at similarity ≥ 0.55, and
    no document whose fact is among them (`prefer_facts`).

    A row with a numeric similarity is kept at ≥ 0.55. A row the vector channel did not score
    (similarity null: a door without embeddings, or a keyword-only hit) has no similarity to clear,
    and a keyword match on a common word ("use") is no evidence it bears on the prompt, so it is kept
    only on the one keyword match that is: the prompt names an identifier (`trivial.identifiers`:
    BLI-3580, parse_args, foo.py, a version — the same override that searches short prompts) and the
    row contains that identifier, case aside.
    """
    rows = answer.get("results")
    if not isinstance(rows, list):
        return []
    needles = [word.lower() for word in prompt_identifiers or []]
    kept: list[dict[str, object]] = []
    for row in rows:
        content = str(row.get("content", "")) if isinstance(row, dict) else ""
        if not isinstance(row, dict) or not content.strip():
            continue
        similarity = row.get("similarity")
        if isinstance(similarity, (int, float)) and not isinstance(similarity, bool):
            if float(similarity) < RECALL_MIN_SIMILARITY:
                continue
        elif not any(needle in content.lower() for needle in needles):
            continue
        kept.append(row)
    return prefer_facts(kept)[:RECALL_LIMIT]


def _is_fact(row: dict[str, object]) -> bool:
    return row.get("kind", "memory") == "memory"


def _metadata(row: dict[str, object]) -> dict[str, object]:
    metadata = row.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def prefer_facts(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """`rows` less every document a fact among them was distilled from: the fact names the document's
    customId in its metadata `exchange`, or the document lists the fact's id in its `facts`."""
    shown_exchanges: set[object] = set()
    fact_ids: set[object] = set()
    for row in rows:
        if _is_fact(row):
            fact_ids.add(row.get("id"))
            shown_exchanges.add(_metadata(row).get(FACT_EXCHANGE_FIELD))
    shown_exchanges.discard(None)
    fact_ids.discard(None)
    kept: list[dict[str, object]] = []
    for row in rows:
        if not _is_fact(row):
            if row.get("customId") in shown_exchanges:
                continue
            facts = _metadata(row).get(EXCHANGE_FACTS_FIELD)
            if isinstance(facts, list) and any(fact in fact_ids for fact in facts):
                continue
        kept.append(row)
    return kept


def render_recall(rows: list[dict[str, object]], container_tag: str, now_s: float) -> str:
    lines = [
        f"Memories from this space ({container_tag}) and your global space that may bear on the prompt:"
        if any(row.get("scope") == "global" for row in rows)
        else f"Memories from this space ({container_tag}) that may bear on the prompt:"
    ]
    for index, row in enumerate(rows, 1):
        lines += item_lines(index, row, now_s)
    return render_block(RECALL_TAG, lines)


def search_query(prompt: str) -> str:
    """What the door is asked: the prompt's first QUERY_MAX_BYTES, its secrets masked as a save's are.

    A secret never leaves the machine in a query either. In a process that keeps running, the redactor
    is already loaded (the daemon imports it at start) and always runs; a one-shot hook imports it only
    when the standard-library pre-scan (`secret_scan.might_hold_secret`, which never misses a text the
    redactor would change) says the prompt may hold a secret: the import alone costs more than the
    rest of the recall path.
    """
    import sys  # built in: loaded before any module of ours

    text = prompt.strip()
    window = clip_utf8(text, REDACT_WINDOW_BYTES)
    if "bli_memory.redact" in sys.modules or might_hold_secret(window):
        from bli_memory.redact import redact

        redacted = redact(window).text
    else:
        redacted = window
    if len(window) < len(text):
        redacted = redacted[:-WINDOW_EDGE_CHARS]
    return clip_utf8(redacted, QUERY_MAX_BYTES)


def answer(
    payload: dict[str, object],
    cwd: str,
    *,
    deadline: float,
    settings: Settings | None = None,
    connection: Connection | None = None,
) -> tuple[str, dict[str, object]]:
    """(stdout, outcome) for one prompt the caller found worth a search (`trivial.skip_reason` is
    None: `hooks.run` decides that once per run); raises only for an internal failure the caller names."""
    prompt = payload.get("prompt")
    assert isinstance(prompt, str)
    settings = door.paired_settings(settings)
    if settings is None:
        return "", receipt.skipped("unpaired")
    from bli_memory.door_client import DoorCallError

    query = search_query(prompt)
    try:
        container_tag, found = door.call(
            settings,
            cwd,
            connection,
            lambda client, tag: client.search(
                query, tag, limit=RECALL_LIMIT, threshold=RECALL_MIN_SIMILARITY, deadline=deadline
            ),
        )
    except DoorCallError as exc:
        return "", receipt.failed(exc.reason)
    if not isinstance(found, dict):
        return "", receipt.failed("bad_response")
    rows = recalled_rows(found, identifiers(prompt))
    if not rows:
        return "", receipt.ok(hits=0)
    return render_recall(rows, container_tag, time.time()), receipt.ok(hits=len(rows))
