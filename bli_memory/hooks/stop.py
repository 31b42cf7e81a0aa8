"""Stop: keep the turn. Send the last user/assistant exchange, redacted, to be distilled into facts.

The exchange is at most 12 KB, tail-read from the transcript (the reply preferably from the payload's
`last_assistant_message`, the prompt preferably the one the prompt hook remembered for this session:
`hooks.last_prompt`, because the transcript may lag a turn behind), masked by `bli_memory.redact`
before it leaves the machine (each part whole, then clipped to 12 KB), and saved with
`extract: true`: the door answers 202 and distils after the response, so the receipt says
`{"chars":…,"masked":…,"queued":true}` and never a count it cannot see. A re-entrant Stop
(`stop_hook_active`) saves nothing. If redaction fails nothing is sent (`redaction_failed`).

A failed save is the one hook failure a person should hear about — the turn was not kept — and
Claude Code shows no hook stderr, so it prints one `systemMessage` JSON line. Codex rejects plain
text (and, in some builds, empty output) from Stop, so for Codex an otherwise empty answer is `{}`.
"""

from __future__ import annotations

import json

from bli_memory.hooks import door, last_prompt, receipt
from bli_memory.hooks.prompt import MARKER
from bli_memory.hooks.transcript import Exchange, compose, last_exchange, redaction_span

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from bli_memory.settings import Settings
    from bli_memory.wire.http import Connection

SAVE_METADATA = {"source": "stop_hook"}
CODEX_EMPTY_STDOUT = "{}\n"


def failure_message(reason: str) -> str:
    """The one JSON line a failed save prints (valid for Claude Code and Codex alike)."""
    text = f"{MARKER} bli-memory: this turn was not saved to memory ({reason})."
    return json.dumps({"systemMessage": text}) + "\n"


def _save(
    payload: dict[str, object],
    cwd: str,
    deadline: float,
    settings: Settings,
    connection: Connection | None,
    prompt: str | None,
) -> tuple[str, dict[str, object]]:
    exchange = last_exchange(payload.get("transcript_path"), payload.get("last_assistant_message"), prompt)
    if not compose(exchange).strip():
        return "", receipt.skipped("no_transcript")
    try:
        clean, masked = _redacted(exchange)
    except Exception:  # an unredacted turn must never leave the machine
        return "", receipt.skipped("redaction_failed")
    clean_text = compose(clean)
    from bli_memory.door_client import DoorCallError

    try:
        _, saved = door.call(
            settings,
            cwd,
            connection,
            lambda client, tag: client.save(
                clean_text, tag, extract=True, metadata=dict(SAVE_METADATA), deadline=deadline
            ),
        )
    except DoorCallError as exc:
        outcome = receipt.failed(exc.reason)
        return failure_message(str(outcome["reason"])), outcome
    queued = isinstance(saved, dict) and saved.get("queued") is True
    return "", receipt.ok(chars=len(clean_text), masked=masked, queued=queued)


def _redacted(exchange: Exchange) -> tuple[Exchange, int]:
    """Each part masked whole, before `compose` clips it: a secret that straddles a cut (a private
    key whose BEGIN line falls in the cut-out middle of a long reply) is seen entire, and only its
    mask can be cut. A part is first brought to `redaction_span` (head and tail far wider than what
    is kept), which bounds the cost of a multi-megabyte reply."""
    from bli_memory.redact import redact  # type: ignore[import-not-found,unused-ignore]

    user = redact(redaction_span(exchange.user))
    assistant = redact(redaction_span(exchange.assistant))
    return Exchange(user.text, assistant.text), int(user.masked) + int(assistant.masked)


def answer(
    payload: dict[str, object],
    cwd: str,
    *,
    deadline: float,
    settings: Settings | None = None,
    connection: Connection | None = None,
) -> tuple[str, dict[str, object]]:
    """(stdout, outcome) for one Stop; raises only for an internal failure the caller names."""
    if payload.get("stop_hook_active") is True:
        return "", receipt.skipped("reentrant")
    # taken (and removed) whatever happens next, so it can never be paired with a later turn
    prompt = last_prompt.take(payload.get("session_id"), payload.get("turn_id"))
    last_prompt.prune()
    settings = door.paired_settings(settings)
    if settings is None:
        return "", receipt.skipped("unpaired")
    return _save(payload, cwd, deadline, settings, connection, prompt)
