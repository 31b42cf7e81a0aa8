"""UserPromptSubmit: recall what this space remembers about the prompt, before the model starts.

Order matters for cost: the trivial-prompt rule runs first on the text alone (no settings, no door),
then pairing, then one search (top 5, similarity ≥ 0.55, or the door's own `relevance` at its `floor`
when the answer carries them; a row without either only when it contains an identifier the prompt
names, see `recalled_rows`). Zero hits prints nothing — the model must never reason about a "no
memories" line, which would read the same as an unreachable store. A failed recall is silent on
stdout too: the receipt on stderr says why, and an `ok` one counts the rows the door `found`, the
`hits` shown and the rows `held` back.

The door keeps each exchange the Stop hook sent as a stored exchange (kind `document`) beside the
facts distilled from it. The block prefers facts: they come first, and a stored exchange is shown only
when no fact from it is already shown (`prefer_facts`), so a turn the librarian missed is still
recalled, and one it distilled is not shown twice.

The block is short (RECALL_BLOCK_MAX_CHARS in all): each row is one line, its text cut by
`excerpt.excerpt` to the sentences that bear on the prompt (a stored exchange by the sentences that
answer it, not by the question it starts with), and a row with no room left is held back.

The block (and session-start's, which reuses `render_block`) carries this store's marker `[bli]` on
every line, so the live A/B (this store against another memory store, both answering the same agents)
can tell whose recall an agent saw.
"""

from __future__ import annotations

import time

from bli_memory.hooks import door, receipt
from bli_memory.hooks.excerpt import Prompt, excerpt
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
#: Claude Code caps injected text at 10,000 characters (then replaces it by a file path); session
#: start's block is held to this
BLOCK_MAX_CHARS = 8000
#: the recall block, tags and all, comes before every answer: five rows cut to what bears on the prompt
#: fit here, and a long block is skimmed, not read
RECALL_BLOCK_MAX_CHARS = 1500
#: one row's text at most, after `excerpt` cut it to its sentences that bear on the prompt
ROW_TEXT_MAX_CHARS = 400
#: a row whose share of what is left of the block is less than this (and whose text is longer) is held
#: back: a few words of it would say nothing
ROW_TEXT_MIN_CHARS = 80

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


def row_head(index: int, row: dict[str, object], now_s: float) -> str:
    """`1. [3d · cosine similarity 0.81 · id …] `: what a row is, before its text."""
    facets = [format_age(row.get("createdAt"), now_s)]
    similarity = _number(row.get("similarity"))
    if similarity is not None:
        facets.append(f"cosine similarity {similarity:.2f}")
    if row.get("kind", "memory") != "memory":
        facets.append(str(row.get("kind")))
    if row.get("scope") == "global":  # the door searches this space and the person's global one
        facets.append("global")
    if row.get("id"):
        facets.append(f"id {row['id']}")
    return f"{index}. [{' · '.join(facets)}] "


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _clears_floor(row: dict[str, object], floor: float | None, needles: list[str]) -> bool:
    """Whether one row bears on the prompt enough to be shown (see `recalled_rows`)."""
    relevance = _number(row.get("relevance"))
    if floor is not None and relevance is not None:
        return relevance >= floor
    similarity = _number(row.get("similarity"))
    if similarity is not None:
        return similarity >= RECALL_MIN_SIMILARITY
    content = str(row.get("content", "")).lower()
    return any(needle in content for needle in needles)


def found_rows(answer: dict[str, object]) -> list[dict[str, object]]:
    """The door's results that have text: what it found, whether shown or not."""
    rows = answer.get("results")
    if not isinstance(rows, list):
        return []
    return [row for row in rows if isinstance(row, dict) and str(row.get("content", "")).strip()]


def recalled_rows(
    answer: dict[str, object], prompt_identifiers: list[str] | None = None
) -> list[dict[str, object]]:
    """The door's results that clear the floor: at most the top 5, facts first, and no document whose
    fact is among them (`prefer_facts`).

    The floor: when the answer carries a numeric `floor`, a row with a numeric `relevance` is kept at
    or above it (the door's own calibrated measure). Otherwise a row with a numeric similarity is kept
    at ≥ 0.55. A row the vector channel did not score (similarity null: a door without embeddings, or
    a keyword-only hit) has no similarity to clear, and a keyword match on a common word ("use") is
    no evidence it bears on the prompt, so it is kept only on the one keyword match that is: the
    prompt names an identifier (`trivial.identifiers`: BLI-3580, parse_args, foo.py, a version — the
    same override that searches short prompts) and the row contains that identifier, case aside.
    """
    floor = _number(answer.get("floor"))
    needles = [word.lower() for word in prompt_identifiers or []]
    kept = [row for row in found_rows(answer) if _clears_floor(row, floor, needles)]
    facts_first = sorted(prefer_facts(kept), key=lambda row: not _is_fact(row))
    return facts_first[:RECALL_LIMIT]


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


def _flat(text: str) -> str:
    return " ".join(text.split())


def text_rooms(needs: list[int], total: int) -> list[int]:
    """Each row's room for text out of `total`: a row that needs less than an equal share gets what it
    needs, and what it leaves is shared by the others (water-filling), so one short fact never
    squeezes a long exchange, whatever their order."""
    rooms = [0] * len(needs)
    left = total
    for count, index in enumerate(sorted(range(len(needs)), key=lambda i: (needs[i], i))):
        rooms[index] = min(needs[index], left // (len(needs) - count))
        left -= rooms[index]
    return rooms


def recall_lines(rows: list[dict[str, object]], container_tag: str, now_s: float, prompt: str) -> list[str]:
    """The recall block's lines: a header, then one line per row that fits, its text cut by
    `excerpt` to what bears on `prompt`.

    The block's RECALL_BLOCK_MAX_CHARS, less the tags, the header and each row's head, is shared out
    by `text_rooms`; a row needs its whole text, at most ROW_TEXT_MAX_CHARS. While a row's room is
    under ROW_TEXT_MIN_CHARS (and its text is longer), the last such row is held back and the rest
    share again."""
    header = (
        f"Memories from this space ({container_tag}) and your global space that may bear on the prompt:"
        if any(row.get("scope") == "global" for row in rows)
        else f"Memories from this space ({container_tag}) that may bear on the prompt:"
    )
    framing = sum(len(f"{MARKER} {text}") + 1 for text in (f"<{RECALL_TAG}>", header, f"</{RECALL_TAG}>"))
    texts = [str(row.get("content", "")) for row in rows]
    needs = [min(ROW_TEXT_MAX_CHARS, len(_flat(text))) for text in texts]
    shown = list(range(len(rows)))
    heads: list[str] = []
    rooms: list[int] = []
    while shown:
        heads = [row_head(place, rows[index], now_s) for place, index in enumerate(shown, 1)]
        total = RECALL_BLOCK_MAX_CHARS - framing - sum(len(MARKER) + len(head) + 2 for head in heads)
        rooms = text_rooms([needs[index] for index in shown], total)
        short = [
            place for place, index in enumerate(shown) if rooms[place] < min(ROW_TEXT_MIN_CHARS, needs[index])
        ]
        if not short:
            break
        del shown[short[-1]]
    wanted = Prompt(prompt)
    return [header] + [
        heads[place] + excerpt(texts[index], wanted, rooms[place]) for place, index in enumerate(shown)
    ]


def render_recall(
    rows: list[dict[str, object]], container_tag: str, now_s: float, prompt: str = ""
) -> tuple[str, int]:
    """(the recall block, how many rows it shows); no rows shown, no block."""
    lines = recall_lines(rows, container_tag, now_s, prompt)
    if len(lines) == 1:
        return "", 0
    return render_block(RECALL_TAG, lines), len(lines) - 1


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
            # a door with relevance keeps a row its floor keeps whatever its cosine; an older door
            # ignores keep_relevant and applies the 0.55 cosine floor alone, as it always did
            lambda client, tag: client.search(
                query,
                tag,
                limit=RECALL_LIMIT,
                threshold=RECALL_MIN_SIMILARITY,
                keep_relevant=True,
                deadline=deadline,
            ),
        )
    except DoorCallError as exc:
        return "", receipt.failed(exc.reason)
    if not isinstance(found, dict):
        return "", receipt.failed("bad_response")
    found_count = len(found_rows(found))
    rows = recalled_rows(found, identifiers(prompt))
    block, shown = render_recall(rows, container_tag, time.time(), query) if rows else ("", 0)
    return block, receipt.ok(hits=shown, found=found_count, held=found_count - shown)
