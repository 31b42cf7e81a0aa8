"""`bli-memory-mcp hook session-start|prompt|stop [--probe] [--host claude|codex]`.

The four rules every hook keeps, so that memory can never cost a person their turn, and where each is
enforced here:

- Never block: one absolute `time.monotonic()` deadline per run (`DEADLINE_S`: 8 / 2 / 15 s, inside
  the 30 / 5 / 30 s the installer registers), taken at entry and threaded into the stdin read and the
  door client; an interval timer raises `HookDeadline` a moment later as a backstop for anything
  that does not watch the clock itself.
- Always exit 0: `main` returns 0 on every branch, including its own bugs (`unknown_internal:<name>`)
  and an unknown or missing event (`unknown_event`: exit 2 would erase the person's prompt).
- Print nothing or one whole block: the event module returns the whole stdout at once; it is written
  with one `os.write` loop after the work is done, never piecemeal.
- One stderr receipt per run (`receipt.line`), and one count in the hourly stats file unless `--probe`.

`answer()` is the core the resident daemon also runs (there is no second implementation of recall):
no stdin, no stats, no printing. `main()` adds those, and tries the daemon first for prompt and
session-start (`bli_memory.hooks.via_daemon`) before taking the direct path. A run decides whether a
prompt is trivial once, and finishes its answer (`hooks.answer.finish`) once, whichever route answered.
"""

from __future__ import annotations

import os
import time

from bli_memory.hooks import receipt
from bli_memory.hooks.answer import DAEMON_EVENTS, DEADLINE_S, HookAnswer, finish
from bli_memory.wire.contract import HOOK_EVENTS

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from types import FrameType

    from bli_memory.settings import Settings
    from bli_memory.wire.http import Connection

#: the host writes the payload at once; a read that takes longer than this is a stuck pipe
STDIN_BUDGET_S = {"session-start": 2.0, "prompt": 1.0, "stop": 3.0}
#: the backstop timer fires this long after the deadline: the door client should have given up first
BACKSTOP_GRACE_S = 0.05
HOSTS = ("claude", "codex")
#: mirrors settings.ENV_DAEMON; read directly so a daemon-routed run never loads the settings module
ENV_DAEMON = "BLI_MEMORY_DAEMON"

USAGE = "usage: bli-memory-mcp hook session-start|prompt|stop [--probe] [--host claude|codex]"


class HookDeadline(Exception):
    """The backstop timer fired: the run outlived its deadline."""

    reason = "timeout"


def detect_host(payload: dict[str, object]) -> str:
    """Codex payloads carry `turn_id` (Claude Code's never do)."""
    return "codex" if "turn_id" in payload else "claude"


def _prompt_skip(payload: dict[str, object]) -> str | None:
    """Why this prompt is not searched (`trivial.skip_reason`), or None; decided once per run, before
    importing the recall code, so the trivial path stays light."""
    from bli_memory.hooks.trivial import skip_reason

    return skip_reason(payload.get("prompt"))


def _dispatch(
    event: str,
    payload: dict[str, object],
    cwd: str,
    deadline: float,
    settings: Settings | None,
    connection: Connection | None,
    prompt_checked: bool,
) -> tuple[str, dict[str, object]]:
    if event == "prompt":
        if not prompt_checked:
            reason = _prompt_skip(payload)
            if reason is not None:
                return "", receipt.skipped(reason)
        from bli_memory.hooks import prompt

        return prompt.answer(payload, cwd, deadline=deadline, settings=settings, connection=connection)
    if event == "session-start":
        from bli_memory.hooks import session_start

        return session_start.answer(payload, cwd, deadline=deadline, settings=settings, connection=connection)
    if event == "stop":
        from bli_memory.hooks import stop

        return stop.answer(payload, cwd, deadline=deadline, settings=settings, connection=connection)
    return "", receipt.failed("unknown_event")


def _failure_stdout(event: str, outcome: dict[str, object]) -> str:
    if event == "stop" and outcome.get("status") == "failed":
        from bli_memory.hooks.stop import failure_message

        return failure_message(str(outcome.get("reason")))
    return ""


def _outcome(
    event: str,
    payload: dict[str, object],
    cwd: str,
    deadline: float,
    settings: Settings | None = None,
    connection: Connection | None = None,
    *,
    prompt_checked: bool = False,
) -> tuple[str, dict[str, object]]:
    """(stdout, outcome) of one event, unfinished; never raises. `prompt_checked`: the caller has
    already found the prompt worth a search (`_prompt_skip`)."""
    try:
        return _dispatch(event, payload, cwd, deadline, settings, connection, prompt_checked)
    except Exception as exc:  # the boundary: any failure becomes a closed-set reason, never a trace
        outcome = receipt.failed(exc)
        return _failure_stdout(event, outcome), outcome


def answer(
    event: str,
    payload: dict[str, object],
    cwd: str,
    *,
    via: str,
    deadline: float | None = None,
    settings: Settings | None = None,
    connection: Connection | None = None,
    host: str | None = None,
) -> HookAnswer:
    """Run one hook on a parsed payload; never raises (an internal failure is a `failed` outcome).

    `deadline` is absolute (`time.monotonic()`); by default the event's budget from now. The daemon
    passes its warm `connection` (kept open) and its own `settings`.
    """
    started = time.monotonic()
    if deadline is None:
        deadline = started + DEADLINE_S.get(event, 0.0)
    stdout, outcome = _outcome(event, payload, cwd, deadline, settings, connection)
    return finish(
        event,
        stdout,
        outcome,
        via=via,
        elapsed_s=time.monotonic() - started,
        host=host or detect_host(payload),
    )


def _parse_argv(argv: list[str]) -> tuple[str | None, bool, str | None]:
    """(event, probe, host); unknown flags are ignored so a newer installer never breaks a turn."""
    event: str | None = None
    probe = False
    host: str | None = None
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--probe":
            probe = True
        elif arg == "--host" and index + 1 < len(argv):
            index += 1
            host = argv[index]
        elif arg.startswith("--host="):
            host = arg.split("=", 1)[1]
        elif not arg.startswith("-") and event is None:
            event = arg
        index += 1
    return event, probe, (host if host in HOSTS else None)


def _write_all(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")
    try:
        while data:
            written = os.write(fd, data)
            data = data[written:]
    except OSError:
        pass  # the host went away; nothing left to tell it


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise HookDeadline()


def _arm_backstop(deadline: float) -> bool:
    try:
        # the C module itself: `signal` wraps its constants in enums (`enum` ~4 ms to import)
        import _signal  # type: ignore[import-not-found]  # typeshed has no stub for it

        _signal.signal(_signal.SIGALRM, _on_alarm)
        _signal.setitimer(_signal.ITIMER_REAL, max(0.001, deadline - time.monotonic() + BACKSTOP_GRACE_S))
        return True
    except (ImportError, AttributeError, ValueError, OSError):
        return False  # no SIGALRM (Windows) or not the main thread: the door client's deadline stands


def _disarm_backstop() -> None:
    import _signal

    _signal.setitimer(_signal.ITIMER_REAL, 0)


def _cwd(payload: dict[str, object]) -> str:
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd and os.path.isdir(cwd):
        return cwd
    try:
        return os.getcwd()
    except OSError:
        from bli_memory.paths import home_dir

        return home_dir()


def _ask_daemon(event: str, payload: dict[str, object], cwd: str, deadline: float) -> HookAnswer | str | None:
    """The daemon's answer; or why not (a via_daemon reason: take the direct path); None when off."""
    if event not in DAEMON_EVENTS or os.environ.get(ENV_DAEMON, "1") == "0":
        return None
    from bli_memory import daemon_wire  # its reasons name every way this can end

    try:
        from bli_memory.hooks import via_daemon

        got = via_daemon.ask_daemon(event, payload, cwd, deadline=deadline)
        if isinstance(got, str):
            via_daemon.after_miss(got)  # start one (throttled), or replace a wedged one at once
        elif got.outcome.get("status") == "failed" and got.outcome.get("reason") == "timeout":
            return daemon_wire.DOOR_TIMEOUT  # the door was slow for the daemon's slice: direct gets the rest
    except HookDeadline:
        raise
    except Exception:  # the daemon is an accelerator: any failure at all means direct
        return daemon_wire.UNAVAILABLE
    return got


def _remember_prompt(payload: dict[str, object]) -> None:
    """Keep this turn's prompt for Stop (the transcript may lag a turn); best effort, never fails."""
    try:
        from bli_memory.hooks.last_prompt import remember

        remember(payload)
    except Exception:
        pass


def _safe_event_name(event: str | None) -> str:
    """A receipt's hook name for an event we do not know: argv text, so only a short plain token."""
    if event and len(event) <= 32 and all(c.isascii() and (c.isalnum() or c in "-_") for c in event):
        return event
    return "hook"


def _failed_run(
    event: str, why: BaseException | str, started: float, host: str | None, probe: bool
) -> HookAnswer:
    """The whole answer of a run that failed before (or around) its door call: the host's failure
    output, if any, and the failed receipt, on the direct route."""
    outcome = receipt.failed(why)
    return finish(
        event,
        _failure_stdout(event, outcome),
        outcome,
        via="direct",
        elapsed_s=time.monotonic() - started,
        host=host or "claude",
        probe=probe,
    )


def run_hook(event: str, probe: bool, host: str | None, started: float) -> HookAnswer:
    """Read the payload, answer (daemon first where it may), under the event's deadline."""
    from bli_memory.hooks.stdin import StdinFailure, read_payload

    deadline = started + DEADLINE_S[event]
    try:
        payload = read_payload(0, min(deadline, started + STDIN_BUDGET_S[event]))
    except StdinFailure as exc:
        return _failed_run(event, exc.reason, started, host, probe)
    host = host or detect_host(payload)
    cwd = _cwd(payload)
    if event == "prompt" and not probe:
        _remember_prompt(payload)
    stdout, outcome, via = _route(event, payload, cwd, deadline)
    # the receipt's duration is the whole hook body, whichever route answered
    return finish(
        event, stdout, outcome, via=via, elapsed_s=time.monotonic() - started, host=host, probe=probe
    )


def _route(
    event: str, payload: dict[str, object], cwd: str, deadline: float
) -> tuple[str, dict[str, object], str]:
    """(stdout, unfinished outcome, route) of one run: no door for a trivial prompt or a re-entered
    Stop; otherwise the daemon first where it may answer, then the direct path, under the backstop."""
    if event == "prompt":
        reason = _prompt_skip(payload)
        if reason is not None:
            return "", receipt.skipped(reason), "direct"
    elif event == "stop" and payload.get("stop_hook_active") is True:
        stdout, outcome = _outcome(event, payload, cwd, deadline)
        return stdout, outcome, "direct"
    armed = _arm_backstop(deadline)
    try:
        routed = _ask_daemon(event, payload, cwd, deadline)
        if isinstance(routed, HookAnswer):
            return routed.stdout, routed.outcome, "daemon"
        stdout, outcome = _outcome(event, payload, cwd, deadline, prompt_checked=True)
        if routed is not None:
            outcome = {**outcome, "daemon": routed}  # why not the daemon (daemon_wire.REASONS)
        return stdout, outcome, "direct"
    except HookDeadline as exc:
        outcome = receipt.failed(exc)
        return _failure_stdout(event, outcome), outcome, "direct"
    finally:
        if armed:
            _disarm_backstop()


def main(argv: list[str]) -> int:
    """The `hook` subcommand. Returns 0 on every branch a host can cause."""
    started = time.monotonic()
    event, probe, host = _parse_argv(argv)
    if "--help" in argv or "-h" in argv or event == "help":
        _write_all(1, USAGE + "\n")
        return 0
    if event not in HOOK_EVENTS:
        # exit 2 would make Claude Code block and erase the prompt: an installer of another version
        # (or a typo) must cost the turn nothing. One failed receipt, not counted in the stats.
        outcome = receipt.clean(receipt.failed("unknown_event"))
        assert outcome is not None
        outcome["via"] = "direct"
        if probe:
            outcome["probe"] = receipt.PROBE_FLAG
        _write_all(2, receipt.line(_safe_event_name(event), outcome) + "\n")
        return 0
    try:
        result = run_hook(event, probe, host, started)
    except BaseException as exc:  # the last boundary: a hook never fails its host
        result = _failed_run(
            event, exc if isinstance(exc, Exception) else "interrupted", started, host, probe
        )
    elapsed_ms = int((time.monotonic() - started) * 1000)
    _write_all(1, result.stdout)
    _write_all(2, receipt.line(event, result.outcome) + "\n")
    if not probe:
        try:
            from bli_memory.hooks import stats

            stats.record(event, result.outcome, elapsed_ms)
        except Exception:
            pass  # counting is best effort; the turn is not
    if event == "session-start" and not probe:
        _start_sync_tick()
    return 0


def _start_sync_tick() -> None:
    """After the answer is out: the hourly experience sync, detached (`bli_memory.hooks.sync_tick`)."""
    try:
        from bli_memory.hooks import sync_tick

        sync_tick.maybe_start()
    except Exception:
        pass
