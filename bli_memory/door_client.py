"""Typed calls to the door's HTTP API, over ``wire.http``, for the hooks, the MCP server and the CLI.

Each method sends one JSON request with ``Authorization: Bearer <device token>`` and returns the decoded
JSON object. Every failure is one exception, ``DoorCallError``, whose ``reason`` is a member of the closed
set in ``wire.reasons`` (``http_404``, ``timeout``, ``dashboard_unreachable``, ``bad_response``), so a
hook receipt and an MCP ``isError`` name the same thing. For a non-2xx answer it also carries the
status and the door's ``{error, message}``; those are for a person reading a CLI error, never for a
receipt (which prints only the reason).

The token lives in one private attribute and goes on the wire only: never into a ``repr``, an error
message, or an exception's arguments.

Standard library only (``json`` plus the wire modules): every hook imports this.
"""

from __future__ import annotations

import json
import time

from bli_memory.wire import http
from bli_memory.wire.reasons import http_reason, to_log_reason

#: the job `check_token` asks for: no job has this id, so only authentication decides the answer.
TOKEN_PROBE_JOB_ID = "job_probe"
TOKEN_REFUSED_REASONS = ("http_401", "http_403")

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:  # pragma: no cover - typing only
    from collections.abc import Mapping
    from typing import Any

#: the door's answers are small; a search of 100 hits of long memories is well under this.
MAX_ANSWER_BYTES = 4 * 1024 * 1024
#: a search keeps this much of its deadline for the search itself; the rest may go to the door's
#: question rewrite (`rewriteBudgetMs`): a 2 s prompt hook leaves it under 1 s, a 20 s tool call 19 s
REWRITE_RESERVE_S = 1.0
REWRITE_BUDGET_MAX_MS = 60_000
#: the door's own message is shown to people; keep it to one readable line.
MAX_MESSAGE_CHARS = 300
_PATH_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


class DoorCallError(Exception):
    """A door call that did not give a 2xx JSON object; ``reason`` is its closed-set reason."""

    def __init__(
        self, reason: str, status: int | None = None, code: str | None = None, message: str | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.code = code
        self.message = message

    def __str__(self) -> str:
        text = self.reason
        if self.code:
            text += f" ({self.code})"
        if self.message:
            text += f": {self.message}"
        return text

    def __repr__(self) -> str:
        return f"DoorCallError(reason={self.reason!r}, status={self.status!r}, code={self.code!r})"


def _path_segment(value: str) -> str:
    """Percent-encode one path segment (a memory or job id) so it cannot step outside its route."""
    return "".join(c if c in _PATH_SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in value)


def _one_line(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text[:MAX_MESSAGE_CHARS] if text else None


def _decode_object(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


class DoorClient:
    """One door, one device token, one keep-alive connection (not thread-safe: one client per thread).

    ``base_url`` may carry a path prefix (``https://tower.example/memory``); the API paths go under it.
    Every method takes ``deadline``, an absolute ``time.monotonic()`` value covering connect, send and
    read together.
    """

    def __init__(self, base_url: str, token: str | None, connection: http.Connection | None = None) -> None:
        self._connection = connection if connection is not None else http.Connection(base_url)
        prefix = http.parse_url(base_url)[3].partition("?")[0]
        self._prefix = prefix.rstrip("/")
        self._origin = self._connection.origin
        self.__token = token

    def __repr__(self) -> str:
        return f"DoorClient({self._origin + self._prefix!r})"

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> DoorClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the API -----------------------------------------------------------------------------------

    def search(
        self,
        q: str,
        container_tag: str,
        *,
        limit: int = 5,
        threshold: float = 0.0,
        scope: str | None = None,
        keep_relevant: bool = False,
        deadline: float,
    ) -> dict[str, Any]:
        """``{results: [...], searched: [tags]}``: meaning, keyword and recency at once; each hit names
        its ``scope`` (``project`` or ``global``). Without ``scope`` the door reads both spaces.
        ``keep_relevant``: ``threshold`` drops only rows whose ``relevance`` is also below the door's
        ``floor`` (a door without relevance ignores it and applies the threshold alone).

        The door may also search a question as a statement (its question rewrite); it is told how
        long that may take: what this call's deadline leaves after REWRITE_RESERVE_S for the search
        itself, so a prompt hook's 2 s budget never waits for a rewrite that does not fit."""
        body: dict[str, Any] = {"q": q, "containerTag": container_tag, "limit": limit, "threshold": threshold}
        if scope is not None:
            body["scope"] = scope
        if keep_relevant:
            body["keepRelevant"] = True
        left_s = deadline - time.monotonic() - REWRITE_RESERVE_S
        body["rewriteBudgetMs"] = max(0, min(REWRITE_BUDGET_MAX_MS, int(left_s * 1000)))
        return self._call("POST", "/api/memory/search", body, deadline=deadline)

    def save(
        self,
        content: str,
        container_tag: str,
        *,
        custom_id: str | None = None,
        extract: bool = False,
        metadata: Mapping[str, Any] | None = None,
        scope: str | None = None,
        deadline: float,
    ) -> dict[str, Any]:
        """``{id, containerTag, status}``, or with ``extract`` (202) ``{queued, jobId, containerTag}``."""
        body: dict[str, Any] = {"content": content, "containerTag": container_tag}
        if scope is not None:
            body["scope"] = scope
        if custom_id is not None:
            body["customId"] = custom_id
        if extract:
            body["extract"] = True
        if metadata is not None:
            body["metadata"] = dict(metadata)
        return self._call("POST", "/api/memory/save", body, deadline=deadline)

    def update(self, memory_id: str, content: str, *, deadline: float) -> dict[str, Any]:
        """``{id, version, previousVersionId, containerTag}``; the old text stays as history."""
        return self._call(
            "POST", "/api/memory/update", {"id": memory_id, "content": content}, deadline=deadline
        )

    def forget(
        self,
        container_tag: str,
        *,
        memory_id: str | None = None,
        content: str | None = None,
        query: str | None = None,
        scope: str | None = None,
        deadline: float,
    ) -> dict[str, Any]:
        """``{forgotten: {id, content, similarity?}, match}``; the door insists on exactly one selector."""
        body: dict[str, Any] = {"containerTag": container_tag}
        if scope is not None:
            body["scope"] = scope
        for name, value in (("id", memory_id), ("content", content), ("query", query)):
            if value is not None:
                body[name] = value
        return self._call("POST", "/api/memory/forget", body, deadline=deadline)

    def profile(self, container_tag: str, q: str | None = None, *, deadline: float) -> dict[str, Any]:
        """``{profile: {static, dynamic}, recent, searched}`` for session start."""
        body: dict[str, Any] = {"containerTag": container_tag}
        if q is not None:
            body["q"] = q
        return self._call("POST", "/api/memory/v4/profile", body, deadline=deadline)

    # -- pins: always-loaded facts, kept verbatim --------------------------------------------------

    def pin(
        self, content: str, container_tag: str, *, scope: str = "project", deadline: float
    ) -> dict[str, Any]:
        """``{id, containerTag, status, scope}``: ``created``, or ``unchanged`` for a text pinned already."""
        body = {"content": content, "containerTag": container_tag, "scope": scope}
        return self._call("POST", "/api/memory/pin", body, deadline=deadline)

    def pins(self, container_tag: str, *, deadline: float) -> dict[str, Any]:
        """``{pins: [...]}``: the space's pins, then the caller's global ones, each oldest first."""
        return self._call("POST", "/api/memory/pins", {"containerTag": container_tag}, deadline=deadline)

    def unpin(self, memory_id: str, *, deadline: float) -> dict[str, Any]:
        """``{id, previousVersionId, content, containerTag, scope}``: the pin is an ordinary memory again."""
        return self._call("POST", "/api/memory/unpin", {"id": memory_id}, deadline=deadline)

    def history(self, memory_id: str, *, deadline: float) -> dict[str, Any]:
        """``{id, versions: [...]}``, oldest first."""
        return self._call("GET", f"/api/memory/{_path_segment(memory_id)}/history", None, deadline=deadline)

    def job(self, job_id: str, *, deadline: float) -> dict[str, Any]:
        """``{id, status, outcome, error}`` of an extract job."""
        return self._call("GET", f"/api/memory/jobs/{_path_segment(job_id)}", None, deadline=deadline)

    def check_token(self, *, deadline: float) -> str:
        """ "accepted", "refused", or the closed-set reason the check could not get past.

        Asks for a job that cannot exist: 401/403 means the door refused the token; any other 4xx
        means the request got past authentication (the door looked for the job)."""
        try:
            self.job(TOKEN_PROBE_JOB_ID, deadline=deadline)
        except Exception as exc:
            reason = to_log_reason(exc)
            if reason in TOKEN_REFUSED_REASONS:
                return "refused"
            return "accepted" if reason.startswith("http_4") else reason
        return "accepted"

    def healthz(self, *, deadline: float) -> dict[str, Any]:
        """``{ok, version, store, embedder}``; needs no token, so none is sent. A door that answers but
        cannot write (a full disk, a damaged file, a lost database) says so with 503 and the same
        object, ``ok`` false with its ``reason`` and ``message``: that is returned, not raised."""
        return self._call("GET", "/healthz", None, deadline=deadline, authenticate=False, answered_503=True)

    def experience(self, entry: Mapping[str, Any], *, deadline: float) -> dict[str, Any]:
        """Record one experience opinion (201 inserted, 200 an identical retry)."""
        return self._call("POST", "/api/memory/experience", dict(entry), deadline=deadline)

    def hook_stats(self, hours: list[Mapping[str, Any]], *, deadline: float) -> dict[str, Any]:
        """Send this machine's hourly hook figures (`POST /api/ops/hook-stats`); ``{hours}`` written."""
        return self._call("POST", "/api/ops/hook-stats", {"hours": list(hours)}, deadline=deadline)

    # -- browsing -----------------------------------------------------------------------------------

    def list_memories(
        self,
        container_tag: str,
        *,
        limit: int,
        cursor: str | None = None,
        scope: str = "project",
        deadline: float,
    ) -> dict[str, Any]:
        """``{memories: [...], nextCursor, containerTag, scope, searched}``: one page, newest first."""
        body: dict[str, Any] = {"containerTag": container_tag, "limit": limit, "scope": scope}
        if cursor is not None:
            body["cursor"] = cursor
        return self._call("POST", "/api/memory/list", body, deadline=deadline)

    def recent_memories(
        self, container_tag: str, *, limit: int, scope: str = "project", deadline: float
    ) -> dict[str, Any]:
        """``{memories: [...], containerTag, scope, searched}``: the space's latest memories."""
        body = {"containerTag": container_tag, "limit": limit, "scope": scope}
        return self._call("POST", "/api/memory/recent", body, deadline=deadline)

    # -- import and export (the `import` and `export` commands) -----------------------------------------

    def save_imported(
        self,
        content: str,
        container_tag: str,
        *,
        custom_id: str,
        metadata: Mapping[str, Any],
        created_at: str | None,
        scope: str = "project",
        deadline: float,
    ) -> dict[str, Any]:
        """A plain save (never extract) keyed by ``custom_id`` and dated ``created_at`` when known,
        into ``container_tag``'s space or (``scope`` global) the caller's global space:
        ``{id, containerTag, status}``, ``unchanged`` when the same record was imported before."""
        body: dict[str, Any] = {
            "content": content,
            "containerTag": container_tag,
            "customId": custom_id,
            "metadata": dict(metadata),
        }
        if scope != "project":
            body["scope"] = scope
        if created_at is not None:
            body["createdAt"] = created_at
        return self._call("POST", "/api/memory/save", body, deadline=deadline)

    def set_alias(self, alias: str, canonical: str, *, deadline: float) -> dict[str, Any]:
        """Make ``alias`` name the space ``canonical`` (an admin token's call): ``{alias, canonical, tags}``."""
        body = {"alias": alias, "canonical": canonical}
        return self._call("POST", "/api/memory/aliases", body, deadline=deadline)

    def export_page(
        self, container_tag: str | None, *, after: str | None, limit: int, deadline: float
    ) -> dict[str, Any]:
        """``{rows, next, searched}``: rows of one space (or, with ``container_tag`` None, of every
        space of the team) with their history, after the row ``after``; ``next`` is None at the end."""
        body: dict[str, Any] = {"limit": limit}
        if container_tag is None:
            body["all"] = True
        else:
            body["containerTag"] = container_tag
        if after is not None:
            body["after"] = after
        return self._call("POST", "/api/memory/export", body, deadline=deadline)

    def import_rows(self, rows: list[dict[str, Any]], *, deadline: float) -> dict[str, Any]:
        """``{results: [{id, status} | {id, error, message}]}``: exported rows written back as they were."""
        return self._call("POST", "/api/memory/import", {"rows": rows}, deadline=deadline)

    def memory_usage(self, *, deadline: float) -> dict[str, Any]:
        """The team's experience aggregation (`GET /api/ops/memory-usage`), for `bli-memory-mcp ops`."""
        return self._call("GET", "/api/ops/memory-usage", None, deadline=deadline)

    def login_link(self, *, deadline: float) -> str:
        """A one-time, short-lived sign-in link to the door's memory page for this device
        (`POST /api/web/login-link`), as a full URL under this client's door address."""
        answer = self._call("POST", "/api/web/login-link", None, deadline=deadline)
        path = answer.get("path")
        if not isinstance(path, str) or not path.startswith("/login?code="):
            raise DoorCallError("bad_response", message="the door's answer has no login path")
        return self._origin + self._prefix + path

    # -- one exchange ------------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        deadline: float,
        authenticate: bool = True,
        answered_503: bool = False,
    ) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        payload = None
        if body is not None:
            payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if authenticate and self.__token:
            headers["Authorization"] = f"Bearer {self.__token}"
        try:
            response = self._connection.request(
                method,
                self._prefix + path,
                body=payload,
                headers=headers,
                deadline=deadline,
                max_body_bytes=MAX_ANSWER_BYTES,
            )
        except http.WireError as exc:
            raise DoorCallError(exc.reason, message=str(exc)) from None
        except ValueError:
            # A header value that would break framing: only the token can be one. Never echo it.
            raise DoorCallError(
                "unknown_internal:InvalidToken", message="the device token is not a valid header value"
            ) from None
        decoded = _decode_object(response.body)
        if answered_503 and response.status == 503 and decoded is not None and decoded.get("ok") is False:
            return decoded
        if not 200 <= response.status < 300:
            error = decoded or {}
            raise DoorCallError(
                http_reason(response.status),
                status=response.status,
                code=_one_line(error.get("error")),
                message=_one_line(error.get("message")),
            )
        if decoded is None:
            raise DoorCallError(
                "bad_response", status=response.status, message="the door's answer is not a JSON object"
            )
        return decoded
