"""The one stderr line every hook run leaves behind, in exactly three shapes (ok, skipped, failed),
so operators can grep one format whichever hook ran and whichever route answered.

    [bli-memory] prompt ok {"hits":2,"found":5,"held":3,"elapsed_ms":140,"deadline_ms":2000,"via":"direct"}
    [bli-memory] prompt skipped {"reason":"trivial_prompt","via":"direct"}
    [bli-memory] prompt failed {"reason":"dashboard_unreachable","elapsed_ms":1502,"deadline_ms":2000,"via":"direct"}

A prompt's `ok` counts the rows the door `found`, the `hits` its block shows and the rows `held` back
(hits + held = found); session start's counts its `profile`, `recent` and `pins` rows.

An outcome is a flat dict `{"status": ..., <fields>}`. It crosses the daemon socket, so `clean`
rebuilds it from an allow-list of keys with fixed types: whatever a peer sends, a receipt can only
ever carry counts, durations, a closed-set reason, the route and the probe flag — never a prompt, a
memory, a path, a token or a trace.

Imports: `tinyjson` (the line's JSON), `wire.reasons` (the closed reason set) and `wire.contract`
(the outcomes and routes the door's hook stats count), all standard library only and cheap; and `daemon_wire` (the reasons a hook gives for not using the daemon) only for
an outcome that names one, so the trivial path never loads the socket protocol.
"""

from __future__ import annotations

from bli_memory.wire import tinyjson
from bli_memory.wire.contract import HOOK_OUTCOMES, HOOK_ROUTES
from bli_memory.wire.reasons import to_log_reason

PREFIX = "[bli-memory]"
PROBE_FLAG = "stats_excluded"

#: Counted fields an `ok` receipt may carry, in print order; durations follow them.
COUNT_KEYS = ("hits", "found", "held", "profile", "recent", "pins", "chars", "masked")
DURATION_KEYS = ("elapsed_ms", "deadline_ms")
_INT_LIMIT = 10**9


def ok(**counts: int | bool) -> dict[str, object]:
    """An `ok` outcome; `queued` is the only boolean (stop: the door accepted the work for later)."""
    outcome: dict[str, object] = {"status": "ok"}
    outcome.update(counts)
    return outcome


def skipped(reason: str) -> dict[str, object]:
    return {"status": "skipped", "reason": to_log_reason(reason)}


def failed(reason: str | BaseException) -> dict[str, object]:
    return {"status": "failed", "reason": to_log_reason(reason)}


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value < _INT_LIMIT else None


def clean(outcome: object) -> dict[str, object] | None:
    """The outcome rebuilt from the allow-list, in print order; None when it has no valid status."""
    if not isinstance(outcome, dict):
        return None
    status = outcome.get("status")
    if status not in HOOK_OUTCOMES:
        return None
    out: dict[str, object] = {"status": status}
    if status != "ok":
        reason = outcome.get("reason")
        out["reason"] = to_log_reason(reason if isinstance(reason, str) else "missing_reason")
    else:
        for key in COUNT_KEYS:
            value = _count(outcome.get(key))
            if value is not None:
                out[key] = value
        if isinstance(outcome.get("queued"), bool):
            out["queued"] = outcome["queued"]
    if status != "skipped":
        for key in DURATION_KEYS:
            value = _count(outcome.get(key))
            if value is not None:
                out[key] = value
    if outcome.get("via") in HOOK_ROUTES:
        out["via"] = outcome["via"]
    daemon = outcome.get("daemon")
    if daemon is not None:
        from bli_memory.daemon_wire import REASONS  # loaded already by whoever asked the daemon

        if daemon in REASONS:
            out["daemon"] = daemon
    if outcome.get("probe") == PROBE_FLAG:
        out["probe"] = PROBE_FLAG
    return out


def line(hook: str, outcome: dict[str, object]) -> str:
    """`[bli-memory] <hook> <status> {json}` for a cleaned outcome (newline not included)."""
    fields = {key: value for key, value in outcome.items() if key != "status"}
    return f"{PREFIX} {hook} {outcome['status']} {tinyjson.dumps(fields, compact=True)}"
