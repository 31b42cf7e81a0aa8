"""What a hook run produces, and the one place it is finished: `HookAnswer`, `finish`, the budgets.

Shared by the hook's own process (`hooks/run.py`), its side of the daemon socket
(`hooks/via_daemon.py`, which rebuilds the daemon's answer as a HookAnswer) and the daemon
(`bli_memory.daemon`, which runs `run.answer` and sends the HookAnswer back). Standard library
only, and cheap: it is on every hook's cold path.
"""

from __future__ import annotations

from bli_memory.hooks import receipt

#: each hook's own budget, under the host timeouts the installer registers (30 / 5 / 30 s)
DEADLINE_S = {"session-start": 8.0, "prompt": 2.0, "stop": 15.0}
#: events the daemon may answer (Stop always runs in the hook itself: it is not latency-bound)
DAEMON_EVENTS = ("session-start", "prompt")


class HookAnswer:
    """What a hook run produced: the exact stdout, and the (cleaned) receipt outcome."""

    __slots__ = ("outcome", "stdout")

    def __init__(self, stdout: str, outcome: dict[str, object]) -> None:
        self.stdout = stdout
        self.outcome = outcome

    def __repr__(self) -> str:
        return f"HookAnswer(stdout={len(self.stdout)} chars, outcome={self.outcome!r})"


def finish(
    event: str,
    stdout: str,
    outcome: dict[str, object],
    *,
    via: str,
    elapsed_s: float,
    host: str,
    probe: bool = False,
) -> HookAnswer:
    """Stamp route, timing and probe flag on an outcome, clean it, and fit stdout to the host.

    An outcome without a valid status becomes `failed missing_outcome`, keeping what was stamped.
    """
    stamped = dict(outcome)
    stamped["via"] = via
    if stamped.get("status") != "skipped":
        stamped["elapsed_ms"] = max(0, int(elapsed_s * 1000))
        stamped["deadline_ms"] = int(DEADLINE_S.get(event, 0.0) * 1000)
    if probe:
        stamped["probe"] = receipt.PROBE_FLAG
    cleaned = receipt.clean(stamped) or receipt.clean({**stamped, **receipt.failed("missing_outcome")})
    assert cleaned is not None
    if event == "stop" and host == "codex" and not stdout:
        from bli_memory.hooks.stop import CODEX_EMPTY_STDOUT

        stdout = CODEX_EMPTY_STDOUT
    return HookAnswer(stdout, cleaned)
