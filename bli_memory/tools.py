"""The memory tools (search, save, update, forget; list and recent; pin, list pins, unpin; experience):
schemas, argument check and door calls.

The MCP server (`mcp_server.py`) and the human CLI (`commands/`) both run `MemoryTools`, so the two
cannot drift apart. Standard library only: `bli-memory-mcp search|save|forget` never load the `mcp` SDK.
Door calls are blocking socket I/O made one at a time (the keep-alive connection is not shared).
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bli_memory import render
from bli_memory.settings import ENV_URL, Settings
from bli_memory.wire.contract import (
    EXPERIENCE_STORES,
    EXPERIENCE_VERDICTS,
    FORGET_CLOSEST_MIN_SIMILARITY,
    LIST_LIMIT_DEFAULT,
    MAX_LIMIT,
    MAX_PIN_CHARS,
    MEMORY_ID_PREFIX,
    RECENT_LIMIT_DEFAULT,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_SCOPE_DEFAULT,
    SEARCH_SCOPES,
    WRITE_SCOPES,
)
from bli_memory.wire.reasons import to_log_reason

if TYPE_CHECKING:
    from bli_memory.door_client import DoorClient
    from bli_memory.redact import Redaction

#: each tool call gets this long for all its door round trips together.
TOOL_DEADLINE_S = 20.0
#: search_memory's relevance floor: a row whose cosine similarity the door measured below this is not a
#: match. Without it a vector door returns its nearest rows whatever they are, and "the record is
#: silent" can never be said. Measured with the packaged all-MiniLM-L6-v2 (query vs a 5-memory space):
#: unrelated queries ("zebra quantum flux") score -0.06..0.17, the intended memory 0.36..0.75 even
#: for a one-word query ("numpy" 0.51, "line length" 0.44). The door applies it (`threshold`) before
#: `limit`, and keeps rows without a similarity: the vector channel scores every memory that has a
#: vector, so such a row reached the results through the keyword channel (and a door without an
#: embedder has only that one). A model with another cosine scale (e5's sit at 0.7-0.9) needs its own.
SEARCH_MIN_SIMILARITY = 0.25
INVALID_ARGUMENTS = "invalid_arguments"

# ---- scopes and pins (docs/scopes-and-pins.md)
_HEX_DIGITS = frozenset("0123456789abcdef")

_SEARCH_SCOPE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "enum": list(SEARCH_SCOPES),
    "default": SEARCH_SCOPE_DEFAULT,
    "description": "project: this repository's space; global: your own cross-project facts "
    "(preferences, habits, identities); all (default): both, ranked together, each hit labelled.",
}
_WRITE_SCOPE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "enum": list(WRITE_SCOPES),
    "default": "project",
    "description": "project (default): this repository's space; global: your own space for facts "
    "that hold in every project. Nobody else can read your global space.",
}


def valid_memory_id(value: str) -> bool:
    """Whether `value` has the shape of a memory id (`MEMORY_ID_PATTERN`: `mem_` + 8 to 64 hex digits)."""
    rest = value[len(MEMORY_ID_PREFIX) :]
    return value.startswith(MEMORY_ID_PREFIX) and 8 <= len(rest) <= 64 and set(rest) <= _HEX_DIGITS


_CONTAINER_TAG_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "The memory space to use. Omit it: the space of the current project is derived for you.",
}

#: the shape of the ids the door gives memories (`mem_` and hex digits). The destructive tools
#: (update_memory, forget_memory) check an id against it before any request, so a mangled id (a
#: path, a wildcard, a quoted search hit) never reaches the door.
MEMORY_ID_PATTERN = "^mem_[0-9a-f]{8,64}$"
_MEMORY_ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "pattern": MEMORY_ID_PATTERN,
    "description": "The memory's id, as search_memory or list_memories shows it (mem_ and hex digits).",
}


@dataclass(frozen=True)
class ToolSpec:
    """One tool as `tools/list` shows it. The names and argument names are a contract."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    output_schema: dict[str, Any] = field(
        default_factory=lambda: {
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
        }
    )


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="search_memory",
        title="Search memory",
        description=(
            "Search this project's long-term memory (facts, decisions and context saved in earlier "
            "sessions) by meaning, by keyword and by recency at once. Remembered facts and documents are "
            "listed apart; each hit shows its id, its full text, its age, its source space and a link when "
            "there is one. Cosine similarity is shown only when the store measured one; a memory whose "
            f"cosine similarity is below {SEARCH_MIN_SIMILARITY} is not a match. Zero matches means "
            "the record is silent on the question - that is an answer. An error means the search could not "
            "run, and says why. By default it reads this project's space and your own global space "
            "(cross-project facts) as one ranking, each hit labelled scope project or scope global."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What to look for, in words."},
                "containerTag": _CONTAINER_TAG_SCHEMA,
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": SEARCH_LIMIT_DEFAULT,
                    "description": "How many hits at most.",
                },
                "scope": _SEARCH_SCOPE_SCHEMA,
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        annotations={
            "title": "Search memory",
            "readOnlyHint": True,
            "idempotentHint": True,
            "destructiveHint": False,
            "openWorldHint": False,
        },
    ),
    ToolSpec(
        name="save_memory",
        title="Save memory",
        description=(
            "Remember something durable for future sessions in this project: a decision and why, a "
            "convention, a fact about the code, a fix that worked. One self-contained statement per call. "
            "customId upserts: saving again with the same customId replaces that memory instead of adding "
            "one. extract: true hands a longer text (e.g. an exchange) to the librarian, which distils "
            "atomic facts after answering (queued). The result names the space the memory landed in. "
            "scope global keeps a fact that holds in every project (a preference, a habit, who you are) "
            "in your own global space, which nobody else reads."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "content": {"type": "string", "minLength": 1, "description": "The text to remember."},
                "containerTag": _CONTAINER_TAG_SCHEMA,
                "customId": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Your own key for this memory; saving with it again replaces it.",
                },
                "extract": {
                    "type": "boolean",
                    "default": False,
                    "description": "Distil atomic facts from the text first (answered as queued).",
                },
                "scope": _WRITE_SCOPE_SCHEMA,
            },
            "required": ["content"],
            "additionalProperties": False,
        },
        annotations={
            "title": "Save memory",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    ),
    ToolSpec(
        name="update_memory",
        title="Update memory",
        description=(
            "Replace what a memory says when the fact changed, keeping the old text as history (better "
            "than forget + save, which loses the link between the two). Take the id from search_memory."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "id": _MEMORY_ID_SCHEMA,
                "content": {"type": "string", "minLength": 1, "description": "What it should say now."},
            },
            "required": ["id", "content"],
            "additionalProperties": False,
        },
        annotations={
            "title": "Update memory",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    ),
    ToolSpec(
        name="forget_memory",
        title="Forget memory",
        description=(
            "Tombstone a memory that is wrong or no longer wanted (never a hard delete). Give exactly one "
            "of: id (from search_memory), content (its exact text), or query (forgets the single closest "
            f"match, only when its cosine similarity is at least {FORGET_CLOSEST_MIN_SIMILARITY}). Says "
            "exactly which memory was forgotten, or that nothing matched."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "id": _MEMORY_ID_SCHEMA,
                "content": {"type": "string", "minLength": 1, "description": "The memory's exact text."},
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": f"Words for the memory to forget; the closest match ≥ {FORGET_CLOSEST_MIN_SIMILARITY} goes.",
                },
                "containerTag": _CONTAINER_TAG_SCHEMA,
                "scope": {
                    **_WRITE_SCOPE_SCHEMA,
                    "description": "Where content and query look: project (default) or global (your own "
                    "cross-project space). An id is found in either.",
                },
            },
            "additionalProperties": False,
        },
        annotations={
            "title": "Forget memory",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    ),
)

# -- browsing: list_memories / recent_memories --------------------------------------------------------
#: the spaces browsing reads: this repository's (default), the caller's global space, or both.
BROWSE_SCOPES = SEARCH_SCOPES
_SCOPE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "enum": list(BROWSE_SCOPES),
    "default": "project",
    "description": "Which space to read: project (this repository's, the default), global (your own "
    "cross-project facts) or all (both, newest first, each row labelled).",
}


def _browse_limit_schema(default: int, description: str) -> dict[str, Any]:
    """A browsing tool's `limit`: 1 to the door's bound, with this tool's default."""
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_LIMIT,
        "default": default,
        "description": description,
    }


_READ_ONLY = {"readOnlyHint": True, "idempotentHint": True, "destructiveHint": False, "openWorldHint": False}

BROWSE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="list_memories",
        title="List memories",
        description=(
            "List this project's memories, newest first, a page at a time: each with its id, full text, "
            "age, kind (fact or document) and source (how it was saved, by whom, from which device). "
            "To read the next page pass the `nextCursor` the page gave; pages never repeat or skip a "
            "memory when others are saved meanwhile. For finding something, search_memory is better."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "scope": _SCOPE_SCHEMA,
                "containerTag": _CONTAINER_TAG_SCHEMA,
                "limit": _browse_limit_schema(LIST_LIMIT_DEFAULT, "How many memories on this page at most."),
                "cursor": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The nextCursor of the previous page; omit it for the first page.",
                },
            },
            "additionalProperties": False,
        },
        annotations={"title": "List memories", **_READ_ONLY},
    ),
    ToolSpec(
        name="recent_memories",
        title="Recent memories",
        description=(
            "The most recently saved or changed memories of this project, newest first, with no query: "
            "for picking up where earlier sessions left off. Each shows its id, text, age, kind and source."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "scope": _SCOPE_SCHEMA,
                "containerTag": _CONTAINER_TAG_SCHEMA,
                "limit": _browse_limit_schema(RECENT_LIMIT_DEFAULT, "How many memories at most."),
            },
            "additionalProperties": False,
        },
        annotations={"title": "Recent memories", **_READ_ONLY},
    ),
)
TOOLS = TOOLS + BROWSE_TOOLS
# -- memory_experience: the experience log's tool (the CLI's `log`, recorded by the same code) ----------

MEMORY_EXPERIENCE_TOOL = ToolSpec(
    name="memory_experience",
    title="Log memory experience",
    description=(
        "Record your opinion of a memory store's recall for the live A/B: win (it helped), loss (it was "
        "wrong or missed what it held) or noise (it got in the way). store: bli for lines marked [bli], "
        "supermemory for ◪, both for a joint opinion. The reason is one line, at most 500 characters, "
        "about the tools only - never a prompt, a memory's text or a secret. The opinion is kept in the "
        "local log at once and shipped to the door now or by the next sync; the result says which."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "store": {"type": "string", "enum": list(EXPERIENCE_STORES), "description": "Whose recall."},
            "verdict": {
                "type": "string",
                "enum": list(EXPERIENCE_VERDICTS),
                "description": "win, loss or noise.",
            },
            "reason": {
                "type": "string",
                "minLength": 1,
                "maxLength": 500,
                "description": "Why, in one line.",
            },
        },
        "required": ["store", "verdict", "reason"],
        "additionalProperties": False,
    },
    annotations={
        "title": "Log memory experience",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    },
)
TOOLS = (*TOOLS, MEMORY_EXPERIENCE_TOOL)

# ---- pins: always-loaded facts, kept verbatim (docs/scopes-and-pins.md)
PIN_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="pin_memory",
        title="Pin memory",
        description=(
            "Pin a hard, always-load fact: it is shown at the start of every session in this project "
            "(scope project) or in every project (scope global), stored word for word, never merged, "
            "rewritten or aged by the librarian, and kept out of search results. For standing orders and "
            f"identities that must never be missed; keep it short (at most {MAX_PIN_CHARS} characters). "
            "An ordinary fact belongs in save_memory."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "content": {"type": "string", "minLength": 1, "description": "The fact, word for word."},
                "scope": _WRITE_SCOPE_SCHEMA,
                "containerTag": _CONTAINER_TAG_SCHEMA,
            },
            "required": ["content"],
            "additionalProperties": False,
        },
        annotations={
            "title": "Pin memory",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    ),
    ToolSpec(
        name="list_pins",
        title="List pins",
        description=(
            "List every pin that applies here: this project's, then your global ones, each with its id, "
            "age and scope. Session start shows them already; use this to find an id to unpin."
        ),
        input_schema={
            "type": "object",
            "properties": {"containerTag": _CONTAINER_TAG_SCHEMA},
            "additionalProperties": False,
        },
        annotations={
            "title": "List pins",
            "readOnlyHint": True,
            "idempotentHint": True,
            "destructiveHint": False,
            "openWorldHint": False,
        },
    ),
    ToolSpec(
        name="unpin_memory",
        title="Unpin memory",
        description=(
            "Stop loading a pin at every session start: it becomes an ordinary memory (searched, and "
            "reconciled by the librarian), its pinned text kept as history. If it is no longer true, "
            "forget it afterwards with forget_memory. Take the id from list_pins."
        ),
        input_schema={
            "type": "object",
            "properties": {"id": {"type": "string", "minLength": 1, "description": "The pin's id."}},
            "required": ["id"],
            "additionalProperties": False,
        },
        annotations={
            "title": "Unpin memory",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    ),
)
TOOLS = TOOLS + PIN_TOOLS

TOOLS_BY_NAME: dict[str, ToolSpec] = {tool.name: tool for tool in TOOLS}

_JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "boolean": (bool,)}


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
    """The first way `arguments` break the tool's input schema, in words; None when they fit.

    The low-level SDK server does not validate, and the schemas use only a handful of keywords,
    so a small checker beats pulling jsonschema into the human CLI.
    """
    properties: dict[str, Any] = spec.input_schema["properties"]
    for name in spec.input_schema.get("required", []):
        if arguments.get(name) is None:
            return f"`{name}` is required"
    for name, value in arguments.items():
        schema = properties.get(name)
        if schema is None:
            return f"unknown argument `{name}` (known: {', '.join(properties)})"
        if value is None:
            continue
        expected = schema["type"]
        ok = isinstance(value, _JSON_TYPES[expected]) and not (
            expected == "integer" and isinstance(value, bool)
        )
        if not ok:
            return f"`{name}` must be a {expected}"
        if "enum" in schema and value not in schema["enum"]:
            return f"`{name}` must be one of: {', '.join(schema['enum'])}"
        if expected == "string" and len(value.strip()) < schema.get("minLength", 0):
            return f"`{name}` must not be empty"
        if expected == "string" and "pattern" in schema and not _matches(schema["pattern"], value):
            shown = mask_secrets(value)[:40]  # an error is no place for a secret either
            return f"`{name}` is not a memory id (mem_ and hex digits, as search_memory shows it): {shown!r}"
        if expected == "integer" and not schema.get("minimum", value) <= value <= schema.get(
            "maximum", value
        ):
            return f"`{name}` must be between {schema['minimum']} and {schema['maximum']}"
    return None


def _matches(pattern: str, value: str) -> bool:
    import re  # only the tools that carry a pattern pay for it

    return re.fullmatch(pattern, value) is not None


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returns: text for people and models, the same facts as structured data."""

    text: str
    structured: dict[str, Any]
    is_error: bool = False

    @property
    def reason(self) -> str | None:
        """The closed-set reason of a failure (None on success)."""
        error = self.structured.get("error")
        return error.get("reason") if isinstance(error, Mapping) else None


def _utc_now() -> _dt.datetime:
    return _dt.datetime.now(tz=_dt.timezone.utc)


class MemoryTools:
    """The memory operations against one door, rendered for MCP and the human CLI.

    `space` derives the current project's space tag; it runs at most once (it may ask git).
    """

    def __init__(
        self,
        client: DoorClient,
        *,
        space: Callable[[], str],
        door_url: str | None,
        deadline_s: float = TOOL_DEADLINE_S,
        clock: Callable[[], _dt.datetime] = _utc_now,
        min_similarity: float = SEARCH_MIN_SIMILARITY,
    ) -> None:
        self._client = client
        self._min_similarity = min_similarity
        self._space_fn = space
        self._space: str | None = None
        self._door_url = door_url
        self._deadline_s = deadline_s
        self._clock = clock
        self._lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    def default_space(self) -> str:
        if self._space is None:
            self._space = self._space_fn()
        return self._space

    def _deadline(self) -> float:
        return time.monotonic() + self._deadline_s

    def _tag(self, arguments: Mapping[str, Any]) -> str:
        """The space asked for (masked: a name typed by hand leaves the machine too), else this folder's."""
        tag = arguments.get("containerTag")
        return mask_secrets(tag.strip()) if isinstance(tag, str) and tag.strip() else self.default_space()

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        """Run one tool by name. Never raises: every failure becomes an `is_error` result naming its reason."""
        spec = TOOLS_BY_NAME.get(name)
        if spec is None:
            return self._failure(name, INVALID_ARGUMENTS, f"unknown tool `{name}`")
        args = dict(arguments or {})
        problem = check_arguments(spec, args)
        if problem is not None:
            return self._failure(name, INVALID_ARGUMENTS, problem)
        handler: Callable[[dict[str, Any]], ToolResult] = getattr(self, "_" + name)
        try:
            with self._lock:
                return handler(args)
        except Exception as exc:  # the one boundary: a tool call never crashes the server
            return self._door_failure(name, exc)

    def _failure(self, action: str, reason: str, message: str, **extra: Any) -> ToolResult:
        text, structured = render.render_error(action, reason, message, **extra)
        return ToolResult(text, structured, is_error=True)

    def _door_failure(self, action: str, exc: Exception) -> ToolResult:
        reason = to_log_reason(exc)
        explanation = render.explain_reason(reason, self._door_url)
        door_message = getattr(exc, "message", None)
        status = getattr(exc, "status", None)
        code = getattr(exc, "code", None)
        # The door's own words help for a 4xx it validated (a bad id, a too-long text); for auth and
        # transport failures our explanation is the useful one.
        if isinstance(door_message, str) and door_message and reason not in ("http_401", "http_403"):
            explanation += f" ({door_message.rstrip('.')})"
        return self._failure(
            action,
            reason,
            explanation,
            code=code if isinstance(code, str) else None,
            status=status if isinstance(status, int) else None,
        )

    def _search_memory(self, args: dict[str, Any]) -> ToolResult:
        tag = self._tag(args)
        query = _masked(str(args["query"])).text  # a query leaves the machine too
        limit = int(args.get("limit") or SEARCH_LIMIT_DEFAULT)
        floor = self._min_similarity
        answer = self._client.search(
            query,
            tag,
            limit=limit,
            threshold=floor,
            scope=str(args.get("scope") or SEARCH_SCOPE_DEFAULT),
            deadline=self._deadline(),
        )
        text, structured = render.render_search(query, tag, answer, self._clock(), min_similarity=floor)
        return ToolResult(text, structured)

    def _save_memory(self, args: dict[str, Any]) -> ToolResult:
        tag = self._tag(args)
        masked = _masked(str(args["content"]))
        answer = self._client.save(
            masked.text,
            tag,
            custom_id=None if args.get("customId") is None else mask_secrets(str(args["customId"])),
            extract=bool(args.get("extract", False)),
            scope=args.get("scope"),
            deadline=self._deadline(),
        )
        text, structured = render.render_save(answer, tag)
        return _noting_masks(ToolResult(text, structured), masked)

    def _update_memory(self, args: dict[str, Any]) -> ToolResult:
        memory_id = mask_secrets(str(args["id"]))
        masked = _masked(str(args["content"]))
        content = masked.text
        deadline = self._deadline()
        answer = self._client.update(memory_id, content, deadline=deadline)
        history: dict[str, Any] | None
        try:
            history = self._client.history(str(answer.get("id", memory_id)), deadline=deadline)
        except Exception:  # the update happened; its history is a courtesy, not the answer
            history = None
        text, structured = render.render_update(answer, memory_id, content, history)
        return _noting_masks(ToolResult(text, structured), masked)

    def _forget_memory(self, args: dict[str, Any]) -> ToolResult:
        chosen = [key for key in ("id", "content", "query") if args.get(key) is not None]
        if len(chosen) != 1:
            return self._failure(
                "forget_memory", INVALID_ARGUMENTS, "give exactly one of `id`, `content` or `query`"
            )
        key = chosen[0]
        # sent to the door like a save (whose stored text was masked the same way); an id too
        target = mask_secrets(str(args[key])) if key == "id" else _masked(str(args[key])).text
        tag = self._tag(args)
        try:
            answer = self._client.forget(
                tag,
                memory_id=target if key == "id" else None,
                content=target if key == "content" else None,
                query=target if key == "query" else None,
                scope=args.get("scope"),
                deadline=self._deadline(),
            )
        except Exception as exc:
            code = getattr(exc, "code", None)
            if getattr(exc, "status", None) == 404 and code in ("no_match", "not_found"):
                how = {"id": "id", "content": "exact", "query": "closest"}[key]
                text, structured = render.render_nothing_forgotten(tag, how, target, code=code)
                return ToolResult(text, structured)
            raise
        text, structured = render.render_forget(answer, tag)
        return ToolResult(text, structured)

    # -- browsing --------------------------------------------------------------------------------------

    def _browse_space(self, args: dict[str, Any]) -> tuple[str, str]:
        """The one place browsing resolves which space it reads: (`containerTag`, `scope`)."""
        scope = str(args.get("scope") or "project")
        if scope not in BROWSE_SCOPES:
            raise _ArgumentProblem(f"`scope` must be one of {', '.join(BROWSE_SCOPES)}")
        return self._tag(args), scope

    def _list_memories(self, args: dict[str, Any]) -> ToolResult:
        try:
            tag, scope = self._browse_space(args)
        except _ArgumentProblem as problem:
            return self._failure("list_memories", INVALID_ARGUMENTS, str(problem))
        cursor = args.get("cursor")
        answer = self._client.list_memories(
            tag,
            limit=int(args.get("limit") or LIST_LIMIT_DEFAULT),
            cursor=str(cursor).strip() if cursor else None,
            scope=scope,
            deadline=self._deadline(),
        )
        text, structured = render.render_listing(answer, tag, self._clock())
        return ToolResult(text, structured)

    def _recent_memories(self, args: dict[str, Any]) -> ToolResult:
        try:
            tag, scope = self._browse_space(args)
        except _ArgumentProblem as problem:
            return self._failure("recent_memories", INVALID_ARGUMENTS, str(problem))
        limit = int(args.get("limit") or RECENT_LIMIT_DEFAULT)
        answer = self._client.recent_memories(tag, limit=limit, scope=scope, deadline=self._deadline())
        text, structured = render.render_listing(answer, tag, self._clock(), recent=True)
        return ToolResult(text, structured)

    def _memory_experience(self, args: dict[str, Any]) -> ToolResult:
        """What `bli-memory-mcp log` does, through the same code (`experience_log.record_opinion`)."""
        from bli_memory import experience_log

        store, verdict, reason = str(args["store"]), str(args["verdict"]), str(args["reason"]).strip()
        problem = experience_log.check_opinion(store, verdict, reason)
        if problem is not None:
            return self._failure("memory_experience", INVALID_ARGUMENTS, problem)
        env = os.environ
        try:
            recorded = experience_log.record_opinion(
                store,
                verdict,
                reason,
                env=env,
                client=self._client,
                project=os.path.basename(os.path.abspath(project_dir(env))),
                now=self._clock(),
            )
        except experience_log.ExperienceWriteError as exc:
            return self._failure("memory_experience", "local_write_failed", str(exc))
        text = f"{recorded.receipt}\nRecorded as entry {recorded.id}; "
        text += experience_log.shipping_state(recorded.failure) + "."
        return ToolResult(text, {"summary": text, **recorded.to_json()})

    # ---- pins

    def _pin_memory(self, args: dict[str, Any]) -> ToolResult:
        masked = _masked(str(args["content"]).strip())  # a pin is printed into every teammate's session
        content = masked.text
        if len(content) > MAX_PIN_CHARS:
            return self._failure(
                "pin_memory",
                INVALID_ARGUMENTS,
                f"a pin holds at most {MAX_PIN_CHARS} characters (this one has {len(content)}); "
                "save a longer text with save_memory",
            )
        tag = self._tag(args)
        scope = str(args.get("scope") or "project")
        answer = self._client.pin(content, tag, scope=scope, deadline=self._deadline())
        text, structured = render.render_pin(answer, tag, content)
        return _noting_masks(ToolResult(text, structured), masked)

    def _list_pins(self, args: dict[str, Any]) -> ToolResult:
        tag = self._tag(args)
        answer = self._client.pins(tag, deadline=self._deadline())
        text, structured = render.render_pins(answer, tag, self._clock())
        return ToolResult(text, structured)

    def _unpin_memory(self, args: dict[str, Any]) -> ToolResult:
        memory_id = str(args["id"]).strip()
        if not valid_memory_id(memory_id):
            return self._failure(
                "unpin_memory",
                INVALID_ARGUMENTS,
                f"`id` must be a memory id (`{MEMORY_ID_PREFIX}` and hex digits, from list_pins or `bli-memory-mcp pins`), "
                f"not {mask_secrets(memory_id)[:40]!r}",
            )
        answer = self._client.unpin(memory_id, deadline=self._deadline())
        text, structured = render.render_unpin(answer, memory_id)
        return ToolResult(text, structured)


class _ArgumentProblem(Exception):
    """An argument the schema's types allow but the tool cannot use; its text says why."""


def _masked(content: str) -> Redaction:
    """`content` with its secrets masked, as the Stop hook masks a turn: what an agent or a person
    saves by hand, and every query an agent or a person searches or forgets by, leaves the machine under
    the same rule as what a session saves by itself. Imported here: commands that send no text (list,
    pins, forget by id) never pay for the redactor."""
    from bli_memory.redact import redact

    return redact(content)


def mask_secrets(text: str) -> str:
    """`text` masked as `_masked` masks content, for what is sent beside it: a space's name, a custom
    id, a memory id, an `eval` query. The prompt hook's pre-scan (`secret_scan`, never "no" for
    a text the redactor would change) spares the redactor's import for the plain names of every call."""
    from bli_memory.secret_scan import might_hold_secret

    return _masked(text).text if might_hold_secret(text) else text


def _noting_masks(result: ToolResult, masked: Redaction) -> ToolResult:
    """Say in the answer how many secrets were masked before the text was sent, so nobody is surprised
    to find `[REDACTED:…]` where they typed a key."""
    if not masked.masked:
        return result
    kinds = ", ".join(f"{kind} ×{count}" for kind, count in sorted(masked.kinds.items()))
    note = f"Masked {masked.masked} secret{'s' if masked.masked != 1 else ''} before saving ({kinds})."
    structured = dict(result.structured)
    structured["masked"] = {"count": masked.masked, "kinds": dict(sorted(masked.kinds.items()))}
    structured["summary"] = f"{structured.get('summary', '')} {note}".strip()
    return ToolResult(f"{result.text}\n{note}", structured, is_error=result.is_error)


def project_dir(env: Mapping[str, str]) -> str:
    """The folder whose space is the default: the host's project dir when it says, else the cwd."""
    return env.get("CLAUDE_PROJECT_DIR") or os.getcwd()


class DoorUrlError(Exception):
    """The configured door URL cannot be used (not http(s), no host, bad port); the text is one line."""


def door_client_for(settings: Settings) -> DoorClient:
    """A `DoorClient` for a paired machine; a URL it cannot use is a `DoorUrlError`, never a traceback."""
    from bli_memory.door_client import DoorClient

    assert settings.door_url is not None and settings.token is not None, "callers check settings.paired"
    try:
        return DoorClient(settings.door_url, settings.token)
    except ValueError as exc:  # the wire's own words, which never repeat the URL
        raise DoorUrlError(
            f"bli-memory: the door URL is not usable ({exc}); fix {ENV_URL} or run `bli-memory-mcp login`"
        ) from None


def open_tools(settings: Settings, cwd: str, *, min_similarity: float = SEARCH_MIN_SIMILARITY) -> MemoryTools:
    """`MemoryTools` for a paired machine's door, deriving the default space from `cwd` on first use."""
    from bli_memory.space import resolve_space

    client = door_client_for(settings)
    return MemoryTools(
        client,
        space=lambda: resolve_space(settings, cwd),
        door_url=settings.door_url,
        min_similarity=min_similarity,
    )
