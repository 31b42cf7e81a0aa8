"""Text and structured views of door answers, shared by the MCP server and the human CLI.

Pure functions: no I/O, no clock (callers pass `now`), no imports beyond the
standard library and the names the door shares (`bli_memory.wire.contract`). Every `render_*` returns `(text, structured)` where
`structured` carries the same facts as `text` — Claude Code forwards only
`structuredContent` to the model when it is present, so the two must never say
different things. Both start with the same one-line `summary`.

Rules the output keeps, so an agent reading it can tell facts from documents and check where each
came from:
- remembered facts (`kind: "memory"`) and documents are listed apart; a document that is a stored
  exchange (what the Stop hook sent, kept beside the facts distilled from it) says so;
- each hit shows its id, its full text, its age, its source (space)
  and its link when the door gives one;
- cosine similarity is labelled only when the row carries one: a fused `score`
  is never shown as a similarity and a missing value never as 0%;
- zero matches is data ("the record is silent on ..."), not an error;
- the space named is the one the door says the memory landed in.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from bli_memory.wire.contract import EXCHANGE_SOURCE, FORGET_CLOSEST_MIN_SIMILARITY

HOUR_S = 3600.0
DAY_S = 24 * HOUR_S
MONTH_DAYS = 30
YEAR_DAYS = 365

MATCH_WORDS: dict[str, str] = {
    "id": "by id",
    "exact": "by exact text",
    "closest": "as the closest match",
}


def parse_timestamp(value: object) -> _dt.datetime | None:
    """Read a door timestamp: ISO 8601 text (``Z`` or an offset), or epoch seconds/milliseconds.

    A naive ISO time is taken as UTC, which is what the door writes. Anything
    unreadable gives ``None`` so the caller can say "age unknown" instead of guessing.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = float(value) / 1000.0 if value > 1e11 else float(value)
        try:
            return _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.timezone.utc)
    return parsed


def format_age(created_at: object, now: _dt.datetime) -> str:
    """Age as a person reads it: ``<1h``, ``5h``, ``3d``, ``2mo``, ``1y``; ``?`` when unknown.

    A timestamp in the future (clock skew between machines) reads as ``<1h``.
    """
    when = parse_timestamp(created_at)
    if when is None:
        return "?"
    elapsed_s = (now - when).total_seconds()
    if elapsed_s < HOUR_S:
        return "<1h"
    if elapsed_s < DAY_S:
        return f"{int(elapsed_s // HOUR_S)}h"
    days = int(elapsed_s // DAY_S)
    if days < MONTH_DAYS:
        return f"{days}d"
    if days < YEAR_DAYS:
        return f"{days // MONTH_DAYS}mo"
    return f"{days // YEAR_DAYS}y"


def format_similarity(value: object) -> str | None:
    """``cosine similarity 0.83`` for a real number, ``None`` for null/missing/not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return f"cosine similarity {float(value):.2f}"


def _quote(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return f"“{flat}”"


def _hit_lines(index: int, row: Mapping[str, Any], now: _dt.datetime) -> list[str]:
    facets = [f"id {row.get('id', '?')}", format_age(row.get("createdAt"), now)]
    metadata = row.get("metadata")
    metadata_source = metadata.get("source") if isinstance(metadata, Mapping) else None
    if row.get("kind", "memory") != "memory" and metadata_source == EXCHANGE_SOURCE:
        facets.append("stored exchange")
    row_scope = row.get("scope")
    if row_scope in ("project", "global"):
        facets.append(f"scope {row_scope}")
    source = row.get("containerTag")
    if source and row_scope != "global":  # a global space's tag is the door's, not the reader's
        facets.append(f"source {source}")
    similarity = format_similarity(row.get("similarity"))
    if similarity is not None:
        facets.append(similarity)
    link = row.get("link")
    if link:
        facets.append(f"link {link}")
    lines = [f"{index}. [" + " · ".join(facets) + "]"]
    content = str(row.get("content", ""))
    lines += ["   " + line if line else "" for line in content.splitlines() or [""]]
    return lines


def _with_age(row: Mapping[str, Any], now: _dt.datetime) -> dict[str, Any]:
    out = dict(row)
    out["age"] = format_age(row.get("createdAt"), now)
    return out


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _above_floor(row: Mapping[str, Any], min_similarity: float | None) -> bool:
    """A row the door scored below the floor is not a match; a row it did not score is kept.

    A floor of 0 is no floor (as for the door): cosines can be negative.
    """
    similarity = row.get("similarity")
    if not min_similarity or isinstance(similarity, bool) or not isinstance(similarity, (int, float)):
        return True
    return float(similarity) >= min_similarity


def render_search(
    query: str,
    container_tag: str,
    answer: Mapping[str, Any],
    now: _dt.datetime,
    *,
    min_similarity: float | None = None,
) -> tuple[str, dict[str, Any]]:
    """Search hits split into remembered facts and documents, or the record's silence.

    `min_similarity` is the relevance floor the search asked for; rows below it are dropped here too,
    so a door that ignored the `threshold` still cannot list noise as matches.
    """
    raw_rows = answer.get("results")
    rows = [r for r in raw_rows if isinstance(r, Mapping)] if isinstance(raw_rows, list) else []
    rows = [r for r in rows if _above_floor(r, min_similarity)]
    raw_searched = answer.get("searched")
    searched = [str(t) for t in raw_searched] if isinstance(raw_searched, list) else [container_tag]
    memories = [r for r in rows if r.get("kind", "memory") == "memory"]
    documents = [r for r in rows if r.get("kind", "memory") != "memory"]
    scope = _scope_words(answer.get("scope"), container_tag)
    others = [t for t in searched if t != container_tag]
    if others:
        scope += " (also searched: " + ", ".join(others) + ")"
    if not rows:
        summary = f"The record is silent on {_quote(query)} in {scope}: no memory or document matches"
        if min_similarity:
            summary += f" (meaning matches count from cosine similarity {min_similarity:.2f})"
        summary += "."
        lines = [summary]
    else:
        summary = (
            f"{_plural(len(memories), 'remembered fact', 'remembered facts')} and "
            f"{_plural(len(documents), 'document', 'documents')} for {_quote(query)} in {scope}."
        )
        lines = [summary]
        for title, group in (("Remembered facts:", memories), ("Documents:", documents)):
            if group:
                lines += ["", title]
                for i, row in enumerate(group, 1):
                    lines += _hit_lines(i, row, now)
    structured: dict[str, Any] = {
        "summary": summary,
        "query": query,
        "containerTag": container_tag,
        "searched": searched,
        "scope": answer.get("scope"),
        "silent": not rows,
        "minSimilarity": min_similarity,
        "memories": [_with_age(r, now) for r in memories],
        "documents": [_with_age(r, now) for r in documents],
    }
    return "\n".join(lines), structured


def _landed(answer_tag: object, requested_tag: str) -> tuple[str, str]:
    landed = str(answer_tag) if answer_tag else requested_tag
    note = ""
    if landed != requested_tag:
        note = f" (asked for {requested_tag}; the door files that tag under {landed})"
    return landed, note


def render_save(answer: Mapping[str, Any], requested_tag: str) -> tuple[str, dict[str, Any]]:
    """A save: created/updated/unchanged with the id, or queued for extraction with the job id."""
    landed, note = _landed(answer.get("containerTag"), requested_tag)
    if answer.get("queued"):
        summary = (
            f"Queued for extraction in space {landed}{note} as job {answer.get('jobId', '?')}: "
            "the door distils facts after answering, so nothing is counted yet."
        )
        structured: dict[str, Any] = {
            "summary": summary,
            "queued": True,
            "jobId": answer.get("jobId"),
            "containerTag": landed,
            "requestedContainerTag": requested_tag,
        }
        return summary, structured
    status = str(answer.get("status", "created"))
    verb = {"created": "Saved", "updated": "Updated", "unchanged": "Already remembered"}.get(status, "Saved")
    where = GLOBAL_SPACE_WORDS if answer.get("scope") == "global" else f"space {landed}{note}"
    summary = f"{verb} memory {answer.get('id', '?')} in {where} (status: {status})."
    structured = {
        "summary": summary,
        "queued": False,
        "id": answer.get("id"),
        "status": status,
        "containerTag": landed,
        "requestedContainerTag": requested_tag,
        "scope": answer.get("scope", "project"),
    }
    return summary, structured


def _previous_version(versions: object, current_version: object) -> Mapping[str, Any] | None:
    """The version just before the current one in a door history (oldest first), if any."""
    if not isinstance(versions, list):
        return None
    rows = [v for v in versions if isinstance(v, Mapping)]
    older = (
        [v for v in rows if v.get("version") != current_version] if current_version is not None else rows[:-1]
    )
    return older[-1] if older else None


def render_update(
    answer: Mapping[str, Any],
    memory_id: str,
    content: str = "",
    history: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """An update: the new version, its text, and the text it replaced (kept as history).

    `history` is the door's `GET /api/memory/{id}/history` answer when the caller could fetch it;
    without it the summary still says the old text is kept, just not what it was.
    """
    new_id = answer.get("id", memory_id)
    version = answer.get("version")
    previous = answer.get("previousVersionId")
    summary = f"Updated memory {memory_id}"
    if version is not None:
        summary += f" to version {version}"
    if new_id != memory_id:
        summary += f", now id {new_id}"
    if answer.get("containerTag"):
        summary += f" in space {answer['containerTag']}"
    summary += "; "
    summary += (
        f"the previous text is kept as history ({previous})."
        if previous
        else "the previous text is kept as history."
    )
    lines = [summary]
    if content:
        lines += ["It now says:"] + ["   " + line for line in content.splitlines() or [""]]
    before = _previous_version(history.get("versions") if history else None, version)
    if before is not None:
        lines += ["It said before:"] + [
            "   " + line for line in str(before.get("content", "")).splitlines() or [""]
        ]
    structured: dict[str, Any] = {
        "summary": summary,
        "id": new_id,
        "version": version,
        "previousVersionId": previous,
        "containerTag": answer.get("containerTag"),
        "content": content,
        "previousContent": None if before is None else before.get("content"),
    }
    if history is not None and isinstance(history.get("versions"), list):
        structured["versions"] = [dict(v) for v in history["versions"] if isinstance(v, Mapping)]
    return "\n".join(lines), structured


def render_forget(answer: Mapping[str, Any], container_tag: str) -> tuple[str, dict[str, Any]]:
    """A forget: exactly which memory was tombstoned, and how it was matched."""
    raw = answer.get("forgotten")
    forgotten: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    match = str(answer.get("match", "?"))
    how = MATCH_WORDS.get(match, f"by {match}")
    similarity = format_similarity(forgotten.get("similarity"))
    if similarity is not None:
        how += f", {similarity}"
    landed = str(answer.get("containerTag") or container_tag)
    where = GLOBAL_SPACE_WORDS if answer.get("scope") == "global" else f"space {landed}"
    summary = f"Forgot memory {forgotten.get('id', '?')} in {where} ({how}); it is tombstoned, not erased."
    content = str(forgotten.get("content", ""))
    text = summary + "\nIt said:\n" + "\n".join("   " + line for line in content.splitlines() or [""])
    structured: dict[str, Any] = {
        "summary": summary,
        "forgotten": dict(forgotten),
        "match": match,
        "containerTag": landed,
        "scope": answer.get("scope", "project"),
    }
    return text, structured


def render_nothing_forgotten(
    container_tag: str, how: str, target: str, *, code: str | None = None
) -> tuple[str, dict[str, Any]]:
    """A forget that matched nothing: data ("nothing was forgotten"), not a failure.

    `how` is ``id``/``exact``/``closest``; `target` is what was asked for. The closest match
    only counts at cosine similarity ≥ FORGET_CLOSEST_MIN_SIMILARITY, so the text says so for that case.
    """
    asked = {"id": f"id {target}", "exact": f"the exact text {_quote(target)}"}.get(
        how, f"anything close to {_quote(target)} (cosine similarity ≥ {FORGET_CLOSEST_MIN_SIMILARITY})"
    )
    summary = f"Nothing forgotten in space {container_tag}: no memory matches {asked}."
    structured: dict[str, Any] = {
        "summary": summary,
        "forgotten": None,
        "match": None,
        "asked": {"by": how, "target": target},
        "containerTag": container_tag,
        "code": code,
    }
    return summary, structured


# -- browsing: list_memories / recent_memories ----------------------------------------------------


def _source_words(source: object) -> str:
    """`stop_hook, ana on dev_1a2b` from a listed row's `source` ({origin, person, device})."""
    if not isinstance(source, Mapping):
        return "unknown"
    origin, person, device = (source.get(name) for name in ("origin", "person", "device"))
    who = " on ".join(str(part) for part in (person, device) if part)
    return ", ".join(str(part) for part in (origin, who) if part) or "unknown"


def _listed_lines(index: int, row: Mapping[str, Any], now: _dt.datetime) -> list[str]:
    kind = str(row.get("kind") or "fact")
    if row.get("exchange") is True:
        kind += " (stored exchange)"
    facets = [
        f"id {row.get('id', '?')}",
        f"{format_age(row.get('updatedAt') or row.get('createdAt'), now)} old",
        kind,
        *(["scope global"] if row.get("scope") == "global" else []),
        f"source {_source_words(row.get('source'))}",
    ]
    lines = [f"{index}. [" + " · ".join(facets) + "]"]
    content = str(row.get("content", ""))
    lines += ["   " + line if line else "" for line in content.splitlines() or [""]]
    return lines


def render_listing(
    answer: Mapping[str, Any], container_tag: str, now: _dt.datetime, *, recent: bool = False
) -> tuple[str, dict[str, Any]]:
    """A page of a space's memories, newest first: each with its id, age, kind (fact or document)
    and source (how it was saved, by whom, from which device), and the cursor of the next page."""
    raw_rows = answer.get("memories")
    rows = [r for r in raw_rows if isinstance(r, Mapping)] if isinstance(raw_rows, list) else []
    landed = str(answer.get("containerTag") or container_tag)
    scope = answer.get("scope")
    where = {
        "global": GLOBAL_SPACE_WORDS,
        "all": f"space {landed} and {GLOBAL_SPACE_WORDS}",
    }.get(scope if isinstance(scope, str) else "", f"space {landed}")
    raw_cursor = answer.get("nextCursor")
    cursor = raw_cursor if isinstance(raw_cursor, str) and raw_cursor and not recent else None
    what = "most recent " if recent else ""
    if not rows:
        summary = f"No memories in {where}."
    else:
        summary = f"The {_plural(len(rows), what + 'memory', what + 'memories')} of {where}, newest first"
        summary += f"; more with cursor {cursor}." if cursor else "."
    lines = [summary]
    for index, row in enumerate(rows, 1):
        lines += _listed_lines(index, row, now)
    structured: dict[str, Any] = {
        "summary": summary,
        "containerTag": landed,
        "memories": [
            {**dict(row), "age": format_age(row.get("updatedAt") or row.get("createdAt"), now)}
            for row in rows
        ],
    }
    if not recent:
        structured["nextCursor"] = cursor
    return "\n".join(lines), structured


# ---- scopes and pins (docs/scopes-and-pins.md)

#: how the caller's own global space is named to them (its tag is the door's business).
GLOBAL_SPACE_WORDS = "your global space"


def _scope_words(scope: object, container_tag: str) -> str:
    """Where a search read, in words: the space, the caller's global space, or both."""
    if scope == "global":
        return GLOBAL_SPACE_WORDS
    if scope == "all":
        return f"space {container_tag} and {GLOBAL_SPACE_WORDS}"
    return f"space {container_tag}"


def render_pin(answer: Mapping[str, Any], requested_tag: str, content: str) -> tuple[str, dict[str, Any]]:
    """A pin: created or already pinned, with its id and where it applies."""
    scope = str(answer.get("scope") or "project")
    status = str(answer.get("status", "created"))
    landed = str(answer.get("containerTag") or requested_tag)
    where = f"{GLOBAL_SPACE_WORDS} (every project)" if scope == "global" else f"space {landed}"
    verb = "Already pinned" if status == "unchanged" else "Pinned"
    summary = f"{verb} {answer.get('id', '?')} in {where}: it is shown at every session start there."
    text = summary + "\n" + "\n".join("   " + line for line in content.splitlines() or [""])
    structured: dict[str, Any] = {
        "summary": summary,
        "id": answer.get("id"),
        "status": status,
        "scope": scope,
        "containerTag": None if scope == "global" else landed,
        "content": content,
    }
    return text, structured


def render_pins(
    answer: Mapping[str, Any], container_tag: str, now: _dt.datetime
) -> tuple[str, dict[str, Any]]:
    """Every pin that applies: this space's, then the caller's global ones, each verbatim."""
    raw = answer.get("pins")
    rows = [row for row in raw if isinstance(row, Mapping)] if isinstance(raw, list) else []
    project = [row for row in rows if row.get("scope") != "global"]
    personal = [row for row in rows if row.get("scope") == "global"]
    if not rows:
        summary = f"No pins apply in space {container_tag} (none there, none in {GLOBAL_SPACE_WORDS})."
        lines = [summary]
    else:
        summary = (
            f"{_plural(len(rows), 'pin applies', 'pins apply')} in space {container_tag}: "
            f"{len(project)} of the space, {len(personal)} of {GLOBAL_SPACE_WORDS}."
        )
        lines = [summary]
        index = 0
        for title, group in (("This space:", project), ("Your global space:", personal)):
            if group:
                lines += ["", title]
                for row in group:
                    index += 1
                    facets = [f"id {row.get('id', '?')}", format_age(row.get("createdAt"), now)]
                    lines.append(f"{index}. [" + " · ".join(facets) + "]")
                    content = str(row.get("content", ""))
                    lines += ["   " + line if line else "" for line in content.splitlines() or [""]]
    structured: dict[str, Any] = {
        "summary": summary,
        "containerTag": container_tag,
        "pins": [_with_age(row, now) for row in rows],
    }
    return "\n".join(lines), structured


def render_unpin(answer: Mapping[str, Any], memory_id: str) -> tuple[str, dict[str, Any]]:
    """An unpin: the pin is an ordinary memory again under a new id; how to forget it too."""
    new_id = answer.get("id", "?")
    where = GLOBAL_SPACE_WORDS if answer.get("scope") == "global" else f"space {answer.get('containerTag')}"
    summary = (
        f"Unpinned {memory_id}: it is an ordinary memory of {where} again, now id {new_id} (searched, "
        f"no longer shown at session start). If it is no longer true, forget it: "
        f"`bli-memory-mcp forget --id {new_id}`."
    )
    content = str(answer.get("content", ""))
    text = summary + "\nIt says:\n" + "\n".join("   " + line for line in content.splitlines() or [""])
    structured: dict[str, Any] = {
        "summary": summary,
        "id": new_id,
        "previousVersionId": answer.get("previousVersionId", memory_id),
        "scope": answer.get("scope"),
        "containerTag": answer.get("containerTag"),
        "content": content,
    }
    return text, structured


#: What each closed-set reason means to the person or agent reading a failed tool call.
REASON_EXPLANATIONS: dict[str, str] = {
    "timeout": "the memory door at {url} did not answer in time",
    "dashboard_unreachable": "nothing answered at {url}; is the memory door (`bli-memory-door serve`) running?",
    "bad_response": "the memory door at {url} answered with something that is not readable JSON",
    "http_401": "the memory door refused this machine's device token (unknown or revoked); "
    "pair again with `bli-memory-mcp login`",
    "http_403": "the memory door does not let this device token do that",
    "http_413": "the text is larger than the memory door accepts",
    "unpaired": "this machine is not paired with a memory door",
    "invalid_arguments": "the arguments do not fit the tool",
}


TLS_UNREACHABLE_EXPLANATION = (
    "could not reach the memory door at {url}: it is not running, the address is wrong, or its TLS "
    "handshake failed (a certificate this machine does not trust)"
)


def display_url(url: str | None) -> str | None:
    """A door URL safe to print: user info and query masked (either may hold a credential).

    `http://u:pw@door:8765/x?token=t` → `http://***@door:8765/x?***`. Every place that shows a door
    URL to a person, a log or a model goes through this; the URL itself is never changed.
    """
    if url is None:
        return None
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    cut = len(rest)
    for stop in "/?#":
        index = rest.find(stop)
        if 0 <= index < cut:
            cut = index
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    path, query_mark, _ = tail.partition("?")
    path = path.partition("#")[0]
    if query_mark:
        path += "?***"
    return (scheme + sep if sep else "") + authority + path


def explain_reason(reason: str, door_url: str | None) -> str:
    """One clause saying what a reason means, without the door's own words (callers add those).

    The URL is shown through `display_url`: a credential in it never reaches the text.
    """
    template = REASON_EXPLANATIONS.get(reason)
    if reason == "dashboard_unreachable" and (door_url or "").lower().startswith("https://"):
        # the wire names a failed TLS handshake only in its message, under this same reason: over
        # https "nothing answered" may be false (the door answered with a certificate we refuse)
        template = TLS_UNREACHABLE_EXPLANATION
    if template is None:
        if reason.startswith("http_5"):
            template = "the memory door at {url} failed while answering"
        elif reason.startswith("http_"):
            template = "the memory door at {url} refused the request"
        else:
            template = "the client failed before it could ask the door"
    return template.format(url=display_url(door_url) or "the configured address")


def render_error(
    action: str, reason: str, message: str, *, code: str | None = None, status: int | None = None
) -> tuple[str, dict[str, Any]]:
    """A failure named by its reason, so "could not look" never reads as "found nothing"."""
    detail = f"reason: {reason}"
    if code:
        detail += f", door error: {code}"
    summary = f"{action} failed ({detail})"
    if message:
        summary += f": {message.rstrip('.')}."
    else:
        summary += "."
    structured: dict[str, Any] = {
        "summary": summary,
        "error": {"reason": reason, "code": code, "status": status, "message": message},
    }
    return summary, structured
