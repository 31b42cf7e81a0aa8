"""Plain records passed between the door's HTTP layer, its memory service and its store."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from bli_memory.wire.contract import MEMORY_ID_PREFIX

if TYPE_CHECKING:
    from bli_memory.door.relevance import HitSignals

# Limits every store enforces (the HTTP layer checks them first for a clear 400). The limits a client
# checks too (a search's `limit`, a pin's length) are in `bli_memory.wire.contract`.
MAX_CONTENT_CHARS = 100_000
MAX_TAG_CHARS = 200
MAX_ID_CHARS = 100

# ---- scopes and pins (docs/scopes-and-pins.md)
#: tags that start with this are the door's own: a client naming one as a space is refused (400).
RESERVED_TAG_PREFIX = "bli:"
#: a person's global space is this prefix and the person's id; only the door derives it.
GLOBAL_TAG_PREFIX = RESERVED_TAG_PREFIX + "global:"
#: the metadata flag that makes a row a pin (the store keeps it in its `pinned` column too).
PINNED_FIELD = "pinned"


def global_tag(person_id: int) -> str:
    """The tag of one person's global space (cross-project facts)."""
    return f"{GLOBAL_TAG_PREFIX}{person_id}"


def is_reserved_tag(tag: str) -> bool:
    """Whether a tag a client names looks like one of the door's own (and is refused). Compared
    without case and without white space, so that `BLI:GLOBAL:3` or ` bli: global:3` cannot pass for
    a space of one's own and then be shown or exported beside a person's global space as if it were
    one."""
    return "".join(tag.split()).casefold().startswith(RESERVED_TAG_PREFIX)


def is_door_tag(tag: str) -> bool:
    """Whether a stored row's tag is one the door derived itself (a person's global space): the door
    writes them exactly, so a stored tag is compared as it is (`SHARED_OR_OWN_GLOBAL_SQL` does the
    same in SQL)."""
    return tag.startswith(RESERVED_TAG_PREFIX)


def imported_id(team_id: int, memory_id: str) -> str:
    """The id an imported row is stored under when its own id is not the importer's to use (another
    team holds it, or a row the importer may not see): derived from the team and the id, so that
    importing the same file again finds it, and shaped like any other id. The answer to the import
    is the same as for a free id, so an import is no test of whether an id exists elsewhere."""
    digest = hashlib.sha256(f"bli-import:{team_id}:{memory_id}".encode()).hexdigest()
    return f"{MEMORY_ID_PREFIX}{digest[:24]}"


def is_pinned_metadata(metadata: dict[str, Any] | None) -> bool:
    return bool(metadata) and isinstance(metadata, dict) and metadata.get(PINNED_FIELD) is True


@dataclass(frozen=True)
class Principal:
    """Who is calling: one device of one person in one team."""

    team_id: int
    person_id: int
    device_id: str
    person: str
    team: str
    admin: bool


@dataclass(frozen=True)
class Memory:
    """One row of `memories`: a current version, a superseded one, or a tombstone."""

    id: str
    container_tag: str
    content: str
    kind: str
    status: str
    version: int
    root_id: str
    previous_version_id: str | None
    custom_id: str | None
    metadata: dict[str, Any] | None
    created_at: float
    updated_at: float
    superseded_at: float | None
    person: str | None = None

    @property
    def pinned(self) -> bool:
        """A pin: stored verbatim, always loaded, never searched nor touched by the librarian."""
        return is_pinned_metadata(self.metadata)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "content": self.content,
            "containerTag": self.container_tag,
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
            "version": self.version,
        }
        if self.custom_id is not None:
            body["customId"] = self.custom_id
        if self.metadata:
            body["metadata"] = self.metadata
            link = self.metadata.get("link") if isinstance(self.metadata, dict) else None
            if isinstance(link, str):
                body["link"] = link
        return body


@dataclass(frozen=True)
class Hit:
    memory: Memory
    similarity: float | None
    score: float
    #: the channels whose candidates held this row: "keyword" (BM25 top) and/or "vector" (cosine top)
    matched_by: tuple[str, ...] = ()
    #: the calibrated chance that the row answers the query (`door.relevance`), in [0, 1]; None when
    #: the door's embedder has no calibration
    relevance: float | None = None
    #: what the relevance was computed from (`relevance.HitSignals`); not part of the answer
    signals: HitSignals | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        body = self.memory.to_json()
        body["similarity"] = None if self.similarity is None else round(self.similarity, 4)
        body["relevance"] = None if self.relevance is None else round(self.relevance, 4)
        body["score"] = round(self.score, 6)
        body["matchedBy"] = list(self.matched_by)
        return body


@dataclass(frozen=True)
class SaveResult:
    id: str
    container_tag: str
    status: str  # created | updated | unchanged


@dataclass
class JobOutcome:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    conflicted: int = 0
    extract_ms: int = 0
    reconcile_ms: int = 0
    facts: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, int]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "conflicted": self.conflicted,
            "extract_ms": self.extract_ms,
            "reconcile_ms": self.reconcile_ms,
        }


@dataclass(frozen=True)
class Job:
    id: str
    team_id: int
    person_id: int
    device_id: str
    container_tag: str
    content: str
    metadata: dict[str, Any] | None
    status: str
    attempts: int
    outcome: dict[str, Any] | None
    error: str | None
    created_at: float
    finished_at: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "containerTag": self.container_tag,
            "attempts": self.attempts,
            "outcome": self.outcome,
            "error": self.error,
            "createdAt": iso(self.created_at),
            "finishedAt": None if self.finished_at is None else iso(self.finished_at),
        }


def iso(epoch_s: float) -> str:
    """ISO 8601 in UTC with milliseconds and a Z, as JavaScript clients print it."""
    moment = datetime.fromtimestamp(epoch_s, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> float:
    """Parse an ISO 8601 timestamp to epoch seconds; a naive time is taken as UTC.

    Raises ValueError on anything else.
    """
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def now_s() -> float:
    return time.time()


def hash_text(text: str) -> str:
    """SHA-256 hex of UTF-8 text: a token's stored hash, a memory's content hash."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: every device token starts with this, so a redactor can recognise one (`bli_` + 43 URL-safe chars).
TOKEN_PREFIX = "bli_"


def new_token() -> str:
    """A device token: 256 random bits, URL-safe, behind our prefix."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"
