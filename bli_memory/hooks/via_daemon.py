"""The hook's side of the resident daemon: ask it over its unix socket, or start it detached.

This runs inside the prompt and session-start hooks, so it imports only `os`, `time` and our own
cheap modules (no subprocess: the daemon is started with `os.posix_spawn`). The daemon is an
accelerator: every failure here is a short reason string (`bli_memory.daemon_wire.REASONS`) and the
hook takes the direct path, unchanged. The socket protocol itself is `bli_memory.daemon_wire`.

The daemon reads the token and the door URL from the session file itself, so the token never crosses
the socket. A hook whose environment overrides the token or the URL (or passes git config on the
command line, which may hold credentials) does not use the daemon: `daemon_env_override`.

Budget: the daemon gets DAEMON_SHARE of the time the hook has left (0.8 s of the prompt's 2 s), and
is told a little less, so a daemon that accepts and never answers (stopped, deadlocked) still leaves
the direct path more than half the budget. A daemon that timed out that way is replaced at once
(`replace_wedged`: killed by the pid in its lock file, only after proving it is our daemon and that
it misses a short ping, which its accept loop answers without waiting for a worker), because a
wedged daemon never idles out and would cost every later prompt its slice. (A daemon whose workers
are all stuck stands down by itself; see `bli_memory.daemon`.)

Nothing is started for a machine that is not paired (no session file): the daemon would have
nothing to serve, and would idle for hours.
"""

from __future__ import annotations

import os
import time

from bli_memory import daemon_wire, paths
from bli_memory.daemon_wire import (
    ENV_OVERRIDE,
    LOCK_NAME,
    MISMATCH,
    REQUEST_MAX_BYTES,
    STAMP_NAME,
    STATE_DIR_MODE,
    TIMEOUT,
    TOO_LARGE,
    UNAVAILABLE,
    encode_request,
    lock_holder,
    ping,
)
from bli_memory.hooks import receipt
from bli_memory.hooks.answer import HookAnswer

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from collections.abc import Mapping

#: the share of the hook's remaining time the daemon may use; the rest is the direct path's
DAEMON_SHARE = 0.4
#: the daemon is told to give up this long before the hook does, so its answer arrives in time
REPLY_MARGIN_S = 0.05
#: the prompt hook starts the daemon at most this often per machine (per installed version)
SPAWN_INTERVAL_S = 3600.0
REPLACE_STAMP_NAME = "memory-daemon.replaced"
#: the package's launcher file under `bli_memory/` (`install.contract.HOOK_LAUNCHER`; not imported from
#: there: `contract` imports `shlex`, and so `re`, which no hook run should pay for)
LAUNCHER_PARTS = ("install", "launch", "bli_memory_mcp.py")
#: a wedged daemon is killed and restarted at once; a replacement that wedges again within this is
#: left for this long, so a daemon that cannot start healthy does not cost every prompt a new process
REPLACE_INTERVAL_S = 10.0
#: before killing, one more ping this short: a daemon whose accept loop answers it is busy, not wedged
WEDGE_PING_S = 0.2
#: the session file (`bli_memory.settings.session_file`, named here without importing that module
#: and its `json`): without it the daemon has nothing to serve (an environment token goes direct)
SESSION_FILE_NAME = "session.json"
#: after these, the hook should start a daemon (spawn_daemon keeps that to once an hour)
SPAWN_REASONS = (UNAVAILABLE, MISMATCH)

#: a hook with any of these set goes direct: they are secrets, or settings the daemon cannot share
DECLINE_ENV_NAMES = (
    "BLI_MEMORY_DEVICE_TOKEN",
    "BLI_MEMORY_DASHBOARD_URL",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)


def has_session(env: Mapping[str, str] | None = None) -> bool:
    """True when this HOME holds a non-empty session file: the daemon would have a door to ask."""
    try:
        info = os.stat(os.path.join(paths.config_dir(env), SESSION_FILE_NAME))
    except OSError:
        return False
    import stat  # already loaded by `os` itself: free

    return info.st_size > 0 and stat.S_ISREG(info.st_mode)


def decode_answer(line: bytes) -> HookAnswer | str:
    """An answer line → HookAnswer (outcome rebuilt from the receipt allow-list), or a reason."""
    data = daemon_wire.decode_reply(line)
    if isinstance(data, str):
        return data
    refused = daemon_wire.version_refusal(data)
    if refused is not None:
        return refused
    stdout = data.get("stdout")
    outcome = receipt.clean(data.get("outcome"))
    if not isinstance(stdout, str) or outcome is None:
        return daemon_wire.BAD_RESPONSE
    return HookAnswer(stdout, outcome)


def ask_daemon(
    event: str,
    payload: Mapping[str, object],
    cwd: str,
    *,
    deadline: float,
    env: Mapping[str, str] | None = None,
) -> HookAnswer | str:
    """The daemon's answer to one hook run, or why not (one of `daemon_wire.REASONS`): then take the
    direct path.

    `deadline` is the hook's own absolute `time.monotonic()` deadline, unchanged; the daemon may use
    DAEMON_SHARE of the time left and is told that slice minus REPLY_MARGIN_S, so it gives up on the
    door before the hook gives up on it, and the direct path keeps the rest.
    """
    env = os.environ if env is None else env
    if any(env.get(name) for name in DECLINE_ENV_NAMES):
        return ENV_OVERRIDE
    now = time.monotonic()
    slice_end = now + DAEMON_SHARE * max(0.0, deadline - now)
    budget_s = slice_end - now - REPLY_MARGIN_S
    if budget_s <= 0:
        return TIMEOUT
    line = encode_request(event, payload, cwd, budget_s=budget_s, env=env)
    if len(line) > REQUEST_MAX_BYTES:
        return TOO_LARGE
    got = daemon_wire.exchange(line, slice_end, daemon_wire.socket_path(env))
    return got if isinstance(got, str) else decode_answer(got)


# -- replacing a wedged one ----------------------------------------------------------------------------


def replace_wedged(env: Mapping[str, str] | None = None) -> int | None:
    """Kill a daemon that accepts but does not answer, and start a new one; the new pid, or None.

    Called after `daemon_timeout`. Only our own daemon (`lock_holder`), only when it misses one more
    short ping (answered by its accept loop, so a daemon whose workers are merely busy answers it),
    and then at once, unless a replacement happened less than REPLACE_INTERVAL_S ago (a stamp file).
    SIGKILL because a stopped or deadlocked process does not act on SIGTERM; the socket file it
    leaves is replaced by the next daemon as stale.
    """
    import signal

    env = os.environ if env is None else env
    folder = paths.state_dir(env)
    stamp = os.path.join(folder, REPLACE_STAMP_NAME)
    try:
        age_s = time.time() - os.stat(stamp).st_mtime
        if 0 <= age_s < REPLACE_INTERVAL_S:
            return None
    except OSError:
        pass
    pid = lock_holder(os.path.join(folder, LOCK_NAME))
    if pid is None or ping(time.monotonic() + WEDGE_PING_S, env) != TIMEOUT:
        return None
    if not _write_stamp(stamp, "replaced"):
        return None
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return None
    return spawn_daemon(env, force=True) if has_session(env) else None


def after_miss(reason: str, env: Mapping[str, str] | None = None) -> None:
    """What the hook does about a daemon it could not use, besides going direct: start one when there
    is none (throttled) or when an older one stood down for us (not throttled: the stamp may be this
    version's own, from before), and replace one that timed out. Nothing is started for a machine
    that is not paired: a daemon would have nothing to serve."""
    if reason in SPAWN_REASONS and not has_session(env):
        return
    if reason == UNAVAILABLE:
        spawn_daemon(env)
    elif reason == MISMATCH:
        spawn_daemon(env, force=True)
    elif reason == TIMEOUT:
        replace_wedged(env)


# -- starting it -------------------------------------------------------------------------------------


def _spawn_throttled(stamp: str, version: str, now_s: float) -> bool:
    """True when this version was started less than SPAWN_INTERVAL_S ago (the stamp says so)."""
    try:
        with open(stamp, "rb") as handle:
            stamped = handle.read(64).decode("ascii", "replace").strip()
        age_s = now_s - os.stat(stamp).st_mtime
    except OSError:
        return False
    return stamped == version and 0 <= age_s < SPAWN_INTERVAL_S


def _write_stamp(stamp: str, version: str) -> bool:
    folder = os.path.dirname(stamp)
    try:
        os.makedirs(folder, mode=STATE_DIR_MODE, exist_ok=True)
        fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, version.encode("ascii", "replace") + b"\n")
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _inheritable_fds() -> list[int]:
    """Descriptors above stdio that an exec would pass on (the host may have left some open)."""
    for listing in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(listing)
        except OSError:
            continue
        out = []
        for name in names:
            if not name.isdigit() or int(name) <= 2:
                continue
            try:
                if os.get_inheritable(int(name)):
                    out.append(int(name))
            except OSError:
                pass  # the listing's own descriptor, already closed
        return out
    return []


def _package_root() -> str:
    """The sys.path entry that holds `bli_memory` (a site-packages folder, a checkout, a zipapp)."""
    import bli_memory

    return os.path.dirname(os.path.dirname(os.path.abspath(bli_memory.__file__)))


def daemon_env(env: Mapping[str, str]) -> dict[str, str]:
    """The daemon's environment: this one minus the secrets it must not hold, plus where we live."""
    return with_package_path({name: value for name, value in env.items() if name not in DECLINE_ENV_NAMES})


def with_package_path(env: Mapping[str, str]) -> dict[str, str]:
    """`env` plus PYTHONPATH naming where this `bli_memory` lives, so `python -m bli_memory` finds it."""
    out = dict(env)
    root = _package_root()
    existing = out.get("PYTHONPATH")
    out["PYTHONPATH"] = root + (os.pathsep + existing if existing else "")
    return out


def spawn_daemon(env: Mapping[str, str] | None = None, *, force: bool = False) -> int | None:
    """Start `bli-memory-mcp daemon` detached; its pid, or None when throttled or it could not start.

    Detached: a new session (no controlling terminal, no signal from the host's process group),
    stdin/stdout/stderr on /dev/null, no inherited descriptor. At most once per SPAWN_INTERVAL_S per
    machine and version (a stamp file); a second daemon started by a race exits 0 by itself. The
    caller does not wait for it: the hook exits and init adopts the daemon.
    """
    from bli_memory import __version__

    env = os.environ if env is None else env
    stamp = os.path.join(paths.state_dir(env), STAMP_NAME)
    if not force and _spawn_throttled(stamp, __version__, time.time()):
        return None
    if not _write_stamp(stamp, __version__):
        return None
    return spawn_detached(["daemon"], daemon_env(env))


def _program_argv(python: str, args: list[str]) -> list[str]:
    """How `python` runs this `bli_memory` with `args`, never with the hook's folder on sys.path.

    The hook runs in the person's project, and `python -m` puts the working folder first on sys.path:
    a project's `selectors.py` or `json.py` would be imported by the daemon (which then serves every
    project) in place of the standard library's. A script's own folder comes first instead, so the
    package's launcher file (the one install registers for the hooks) runs it; a zipapp is run as
    itself; `-m` only when neither is there."""
    root = _package_root()
    launcher = os.path.join(root, "bli_memory", *LAUNCHER_PARTS)
    if os.path.isfile(launcher):
        return [python, launcher, *args]
    if os.path.isfile(root):  # a zipapp: the archive is the program
        return [python, root, *args]
    return [python, "-m", "bli_memory", *args]


def spawn_detached(args: list[str], env: Mapping[str, str]) -> int | None:
    """Start `bli-memory-mcp ARGS` (`_program_argv`) detached with environment `env`; its pid, or None.

    Detached: a new session (no controlling terminal, no signal from the host's process group),
    stdin/stdout/stderr on /dev/null, no inherited descriptor, so the host's pipes close when the
    hook exits. The caller does not wait: init adopts the child. Also starts the hourly experience
    sync (`bli_memory.hooks.sync_tick`).
    """
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds()]
    import sys

    argv = _program_argv(sys.executable, args)
    try:
        return os.posix_spawn(sys.executable, argv, dict(env), file_actions=actions, setsid=True)
    except (OSError, AttributeError, NotImplementedError):  # no posix_spawn (Windows): direct only
        return None
