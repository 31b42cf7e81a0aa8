"""The door's request bodies: what each endpoint accepts, checked before a handler runs.

FastAPI validates a body against these models and writes them into `/openapi.json`; a failure becomes
a 400 `invalid_request` (`error_answers`). Beyond types and bounds, every body shares the checks of
`_Body`: text that can be stored and sent back, names that are not blank, no reserved space names, and
plain, bounded metadata. `parse_created_at` checks a client's own timestamp the same way for a save,
an experience entry and an imported row.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from bli_memory.door import browse
from bli_memory.door.errors import InvalidRequest
from bli_memory.door.model import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_TAG_CHARS,
    RESERVED_TAG_PREFIX,
    is_reserved_tag,
    now_s,
    parse_iso,
)
from bli_memory.wire.contract import (
    LIST_LIMIT_DEFAULT,
    MAX_EXPERIENCE_REASON_CHARS,
    MAX_LIMIT,
    MAX_PIN_CHARS,
    RECENT_LIMIT_DEFAULT,
    SEARCH_LIMIT_DEFAULT,
)

MAX_QUERY_CHARS = 10_000
#: how far ahead of the door's clock a client's `createdAt` may be (clock skew), in seconds.
CREATED_AT_SKEW_S = 300.0

_STRICT = ConfigDict(strict=True, extra="ignore")
Tag = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG_CHARS)]
Content = Annotated[StrictStr, Field(min_length=1, max_length=MAX_CONTENT_CHARS)]
Number = StrictFloat | StrictInt


#: metadata is echoed back on every search: bound it so one row cannot poison a space's answers.
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 16
#: fields that name something and must hold more than whitespace.
_NAMED_FIELDS = ("containerTag", "alias", "canonical", "customId", "content", "reason")
#: fields that name a space: none may name a reserved tag (a person's global space is the door's to derive).
_SPACE_FIELDS = ("containerTag", "alias", "canonical")


class _Body(BaseModel):
    """Checks every request body shares: text must be valid Unicode (a lone surrogate would be stored
    but could never be sent back), names must not be blank, metadata must be plain bounded JSON."""

    @model_validator(mode="after")
    def _check(self) -> _Body:
        for name, value in self:
            if isinstance(value, str):
                _valid_unicode(name, value)
                if name in _NAMED_FIELDS and not value.strip():
                    raise ValueError(f"{name} must not be blank")
                if name in _SPACE_FIELDS and is_reserved_tag(value):
                    raise ValueError(
                        f"{name}: tags starting with {RESERVED_TAG_PREFIX!r} are reserved; "
                        "use scope to reach your global space"
                    )
        metadata = getattr(self, "metadata", None)
        if metadata is not None:
            _check_metadata(metadata)
        return self


def _valid_unicode(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name} is not valid Unicode (a lone surrogate)") from None
    if "\x00" in value:  # PostgreSQL text cannot hold it: refused alike on every store
        raise ValueError(f"{name} contains a NUL character (U+0000), which cannot be stored")


def _depth(value: Any, limit: int) -> int:
    if limit < 0:
        return 0
    if isinstance(value, dict):
        return 1 + max((_depth(item, limit - 1) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item, limit - 1) for item in value), default=0)
    return 0


def _check_metadata(metadata: dict[str, Any]) -> None:
    if _depth(metadata, MAX_METADATA_DEPTH + 1) > MAX_METADATA_DEPTH:
        raise ValueError(f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels")
    try:
        encoded = json.dumps(metadata, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a ValueError too: test it first
        raise ValueError("metadata is not valid Unicode (a lone surrogate)") from None
    except ValueError:
        raise ValueError("metadata must be plain JSON (no NaN or Infinity)") from None
    if len(encoded) > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is larger than {MAX_METADATA_BYTES} bytes")


class SearchBody(_Body):
    model_config = _STRICT
    q: Annotated[StrictStr, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    containerTag: Tag
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)] = SEARCH_LIMIT_DEFAULT
    threshold: Annotated[Number, Field(ge=0, le=1)] = 0.0
    #: how long a question's rewrite may take, at most (`bli_memory.door.rewrite`); None: the door's own
    rewriteBudgetMs: Annotated[StrictInt, Field(ge=0, le=60_000)] | None = None
    scope: Literal["project", "global", "all"] = "all"
    #: `threshold` drops only rows whose relevance is also below the door's floor (the prompt hook
    #: asks both: a door without relevance ignores this and applies the threshold alone)
    keepRelevant: StrictBool = False


class SaveBody(_Body):
    model_config = _STRICT
    content: Content
    containerTag: Tag
    customId: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG_CHARS)] | None = None
    extract: StrictBool = False
    metadata: dict[str, Any] | None = None
    createdAt: StrictStr | None = None
    kind: Literal["memory", "document"] = "memory"
    scope: Literal["project", "global"] = "project"


class UpdateBody(_Body):
    model_config = _STRICT
    id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)]
    content: Content


class ForgetBody(_Body):
    model_config = _STRICT
    containerTag: Tag
    id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)] | None = None
    content: Content | None = None
    query: Annotated[StrictStr, Field(min_length=1, max_length=MAX_QUERY_CHARS)] | None = None
    scope: Literal["project", "global"] = "project"


class ProfileBody(_Body):
    model_config = _STRICT
    containerTag: Tag
    q: Annotated[StrictStr, Field(max_length=MAX_QUERY_CHARS)] | None = None


class ListBody(_Body):
    """Browsing: a page of a space, newest first; `cursor` is the `nextCursor` of the page before."""

    model_config = _STRICT
    containerTag: Tag
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)] = LIST_LIMIT_DEFAULT
    cursor: Annotated[StrictStr, Field(min_length=1, max_length=browse.MAX_CURSOR_CHARS)] | None = None
    scope: Literal["project", "global", "all"] = "project"


class RecentBody(_Body):
    model_config = _STRICT
    containerTag: Tag
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_LIMIT)] = RECENT_LIMIT_DEFAULT
    scope: Literal["project", "global", "all"] = "project"


class PinBody(_Body):
    model_config = _STRICT
    content: Annotated[StrictStr, Field(min_length=1, max_length=MAX_PIN_CHARS)]
    containerTag: Tag
    scope: Literal["project", "global"] = "project"


class PinsBody(_Body):
    model_config = _STRICT
    containerTag: Tag


class UnpinBody(_Body):
    model_config = _STRICT
    id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_ID_CHARS)]


class AliasBody(_Body):
    model_config = _STRICT
    alias: Tag
    canonical: Tag


class HookStatsBody(BaseModel):
    """One device's hourly hook figures, each hour as its stats file holds it (`door.hook_stats`)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    hours: list[Any]


class ExperienceBody(_Body):
    model_config = _STRICT
    id: Annotated[StrictStr, Field(max_length=36)] | None = None
    store: Literal["bli", "supermemory", "both"]
    verdict: Literal["win", "loss", "noise"]
    reason: Annotated[StrictStr, Field(min_length=1, max_length=MAX_EXPERIENCE_REASON_CHARS)]
    created_at: StrictStr | None = None

    @model_validator(mode="after")
    def _entry(self) -> ExperienceBody:
        if self.id is not None:
            import uuid

            try:
                parsed = uuid.UUID(self.id)
            except ValueError:
                raise ValueError("id must be a UUID (8-4-4-4-12 hex digits)") from None
            if str(parsed) != self.id.lower() or parsed.int == 0:
                raise ValueError("id must be a UUID (8-4-4-4-12 hex digits)")
        if len(self.reason.splitlines()) != 1 or any(char in self.reason for char in "\u2028\u2029\x85"):
            raise ValueError("reason must be one line")
        return self


#: rows an export page holds at most.
EXPORT_MAX_ROWS = 500
#: rows one import request may carry (the body cap, 1 MiB, usually binds first).
IMPORT_MAX_ROWS = 500
RowId = Annotated[StrictStr, Field(pattern=r"^mem_[A-Za-z0-9_-]{1,96}$")]


class ExportBody(_Body):
    model_config = _STRICT
    containerTag: Tag | None = None
    all: StrictBool = False
    after: RowId | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=EXPORT_MAX_ROWS)] = 200

    @model_validator(mode="after")
    def _one_scope(self) -> ExportBody:
        if (self.containerTag is None) == (not self.all):
            raise ValueError("give containerTag or all: true, not both")
        return self


class ImportRowBody(_Body):
    model_config = _STRICT
    id: RowId
    rootId: RowId
    previousVersionId: RowId | None = None
    version: Annotated[StrictInt, Field(ge=1)]
    status: Literal["current", "superseded", "forgotten"]
    kind: Literal["memory", "document"] = "memory"
    containerTag: Tag
    content: Content
    customId: Annotated[StrictStr, Field(min_length=1, max_length=MAX_TAG_CHARS)] | None = None
    metadata: dict[str, Any] | None = None
    createdAt: StrictStr
    updatedAt: StrictStr
    supersededAt: StrictStr | None = None


class ImportBody(_Body):
    model_config = _STRICT
    rows: Annotated[list[ImportRowBody], Field(min_length=1, max_length=IMPORT_MAX_ROWS)]


def parse_created_at(text: str | None) -> float | None:
    """An optional client timestamp: ISO 8601, not in the future (beyond clock skew)."""
    if text is None:
        return None
    try:
        value = parse_iso(text)
    except (ValueError, OverflowError):
        raise InvalidRequest(f"createdAt is not an ISO 8601 timestamp: {text[:40]!r}") from None
    if value > now_s() + CREATED_AT_SKEW_S:
        raise InvalidRequest("createdAt is in the future")
    if value < 0:
        raise InvalidRequest("createdAt is before 1970")
    return value
