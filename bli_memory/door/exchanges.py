"""Stored exchanges: what the Stop hook sent, kept as a document beside the facts distilled from it.

Pure (no I/O). The extraction worker keeps every exchange it distils as a memory of kind `document`,
so nothing an exchange said is lost when the librarian misses it. The two are linked both ways:

- the document's `customId` is its exchange key, `exchange:` and the first hex digits of the SHA-256
  of its text (so the same exchange saved twice stays one document), and its metadata says
  `source: "exchange"`, the `jobId` that kept it and `facts`: the root ids (first-version ids) of
  the facts distilled from it;
- each of those facts names the key in its metadata `exchange`.

A fact forgotten or superseded has its sentence cut out of its exchange (`cut_fact`): the exchange
gets a new version without it and without the fact in `facts`, or is tombstoned when the sentence is
not in it word for word or nothing else is left. A superseded fact's exchange is left as it was when
it also holds the new text (it still says what is true); otherwise the new version no longer names it
(`unlinked`). So a search for an old value finds no exchange that still says it.

A stored exchange is history, not a fact: reconciliation never compares a new fact with one, the
session-start profile leaves them out, and a door tombstones them after its retention period.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from bli_memory.wire.contract import EXCHANGE_FACTS_FIELD, EXCHANGE_SOURCE, FACT_EXCHANGE_FIELD

if TYPE_CHECKING:
    from bli_memory.door.model import Memory

#: every exchange key (a stored exchange's customId) starts with this.
EXCHANGE_KEY_PREFIX = "exchange:"
#: hex digits of the text's SHA-256 in a key: 96 bits, no two exchanges of a space share one.
EXCHANGE_KEY_HEX_CHARS = 24
#: stored exchanges older than this are tombstoned (their facts stay), unless the door says otherwise.
DEFAULT_RETENTION_DAYS = 90.0
#: metadata of a job that a stored exchange does not inherit (`pinned` would pin it in every profile).
_NOT_INHERITED = ("pinned", "source", FACT_EXCHANGE_FIELD, EXCHANGE_FACTS_FIELD)
_WORD = re.compile(r"\w")
_SPACES = re.compile(r"[ \t]{2,}")
_TRAILING = ".;:!,"


def exchange_key(text: str) -> str:
    """The customId of the document that keeps `text`."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return EXCHANGE_KEY_PREFIX + digest[:EXCHANGE_KEY_HEX_CHARS]


def is_exchange(kind: str, custom_id: str | None, metadata: dict[str, Any] | None) -> bool:
    """Whether a memory is a stored exchange (not a fact, nor a document a person saved)."""
    return (
        kind == "document"
        and custom_id is not None
        and custom_id.startswith(EXCHANGE_KEY_PREFIX)
        and isinstance(metadata, dict)
        and metadata.get("source") == EXCHANGE_SOURCE
    )


def is_stored_exchange(memory: Memory) -> bool:
    """Whether a stored row is a stored exchange (`is_exchange` of its kind, customId and metadata)."""
    return is_exchange(memory.kind, memory.custom_id, memory.metadata)


def fact_exchange(memory: Memory) -> str | None:
    """The key of the stored exchange a distilled fact came from (None for any other memory)."""
    return exchange_of(memory.metadata) if memory.kind == "memory" else None


def source_of(memory: Memory) -> str:
    """The saved exchange a row belongs to: a stored exchange's key, the one a distilled fact came
    from, or the row itself for a memory saved on its own."""
    if is_stored_exchange(memory) and memory.custom_id:
        return memory.custom_id
    return str((memory.metadata or {}).get(FACT_EXCHANGE_FIELD) or memory.id)


def gave_no_facts(memory: Memory) -> bool:
    """Whether `memory` is a stored exchange its extraction job distilled no fact from: a test run, a
    greeting, a question that was only acknowledged. An exchange kept without a job (its metadata
    names no facts at all) is not known to be one."""
    facts = memory.metadata.get(EXCHANGE_FACTS_FIELD) if isinstance(memory.metadata, dict) else None
    return is_stored_exchange(memory) and isinstance(facts, list) and not facts


def exchange_of(metadata: dict[str, Any] | None) -> str | None:
    """The exchange key a fact's metadata names, if any."""
    value = metadata.get(FACT_EXCHANGE_FIELD) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value.startswith(EXCHANGE_KEY_PREFIX) else None


def facts_of(metadata: dict[str, Any] | None) -> list[str]:
    """The fact root ids a stored exchange's metadata lists."""
    value = metadata.get(EXCHANGE_FACTS_FIELD) if isinstance(metadata, dict) else None
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def fact_metadata(job_metadata: dict[str, Any], key: str) -> dict[str, Any]:
    """A distilled fact's metadata: the job's, plus the key of the exchange it came from."""
    return {**job_metadata, FACT_EXCHANGE_FIELD: key}


def document_metadata(
    job_metadata: dict[str, Any] | None, job_id: str, fact_roots: list[str]
) -> dict[str, Any]:
    """A stored exchange's metadata: the job's (less what would misname it), its source, job and facts."""
    inherited = {name: value for name, value in (job_metadata or {}).items() if name not in _NOT_INHERITED}
    return {**inherited, "source": EXCHANGE_SOURCE, "jobId": job_id, EXCHANGE_FACTS_FIELD: fact_roots}


def cut_fact(document: str, fact: str) -> str | None:
    """`document` without every occurrence of the sentence `fact`, or None when it is not there.

    The match ignores case, runs of white space and the fact's closing punctuation (the librarian may
    capitalise a sentence or finish it with a full stop); a full stop right after a match goes too.
    A fact the librarian reworded (a pronoun resolved, an LLM's paraphrase) is not found: the caller
    then takes the whole document out of search instead.
    """
    words = fact.strip().rstrip(_TRAILING).split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(word) for word in words) + r"[.;!]?", re.IGNORECASE)
    cut, count = pattern.subn("", document)
    if not count:
        return None
    lines = [_SPACES.sub(" ", line).rstrip() for line in cut.splitlines()]
    return "\n".join(lines).strip()


def unlinked(metadata: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """A fact's metadata without its link to the exchange `key` (which no longer holds its text)."""
    if exchange_of(metadata) != key:
        return metadata
    return {name: value for name, value in (metadata or {}).items() if name != FACT_EXCHANGE_FIELD}


def has_words(text: str) -> bool:
    return _WORD.search(text) is not None
