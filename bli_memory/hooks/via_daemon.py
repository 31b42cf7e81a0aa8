"""The hook's side of the resident daemon: ask it over its unix socket, or start it detached.

This runs inside the prompt and session-start hooks, so it imports only `os`, `time`, `_socket` and
our `tinyjson` (no subprocess: the daemon is started with `os.posix_spawn`; not `socket` or `json`,
whose `enum` and `re` cost about 8 ms of a cold start, see tests/test_hooks_imports.py). The daemon is an accelerator: every
failure here is a short reason string and the hook takes the direct path, unchanged.

Protocol (one JSON line each way, UTF-8, on `~/.local/state/bli-cockpit/memory-daemon.sock`):

    → {"event": "prompt", "payload": {...}, "cwd": "/abs/folder", "version": "0.1.0",
       "budgetMs": 1900, "env": {"BLI_MEMORY_CONTAINER_TAG": "...", "GIT_CONFIG_GLOBAL": "..."}}
    ← {"stdout": "...", "outcome": {"status": "ok", "hits": 2, ...}}
    ← {"error": "version_mismatch", "version": "0.1.1"}   (it stands down if the caller is newer)
    → {"event": "ping"}   ← {"ok": true, "version": "0.1.0", "pid": 4242}

`env` carries only the variables that decide a folder's space (never a secret): the daemon reads
the token and the door URL from the session file itself, so the token never crosses the socket. A hook
whose environment overrides the token or the URL (or passes git config on the command line, which may
hold credentials) does not use the daemon: `daemon_env_override`.

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

import _socket  # the C module itself: `socket` wraps its constants in enums (`enum` ~4 ms to import)
import os
import time

from bli_memory.hooks import tinyjson

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    from collections.abc import Mapping

    from bli_memory.hooks.run import HookAnswer

SOCKET_NAME = "memory-daemon.sock"
LOCK_NAME = "memory-daemon.lock"
STAMP_NAME = "memory-daemon.spawned"
STATE_DIR_MODE = 0o700
#: the seed's connect budget, taken inside the hook's own unchanged deadline
CONNECT_BUDGET_S = 0.05
#: the share of the hook's remaining time the daemon may use; the rest is the direct path's
DAEMON_SHARE = 0.4
#: the daemon is told to give up this long before the hook does, so its answer arrives in time
REPLY_MARGIN_S = 0.05
#: the hook reads at most 4 MiB of payload; a request line is that, re-encoded, plus a little
REQUEST_MAX_BYTES = 4 * 1024 * 1024 + 64 * 1024
#: an answer is one block of at most a few thousand characters and a small outcome
RESPONSE_MAX_BYTES = 1024 * 1024
RECV_BYTES = 64 * 1024
#: the prompt hook starts the daemon at most this often per machine (per installed version)
SPAWN_INTERVAL_S = 3600.0
#: the daemon tells its version with every answer; a request of a newer version makes it stand down
VERSION_MISMATCH = "version_mismatch"
REPLACE_STAMP_NAME = "memory-daemon.replaced"
#: a wedged daemon is killed and restarted at once; a replacement that wedges again within this is
#: left for this long, so a daemon that cannot start healthy does not cost every prompt a new process
REPLACE_INTERVAL_S = 10.0
#: before killing, one more ping this short: a daemon whose accept loop answers it is busy, not wedged
WEDGE_PING_S = 0.2
#: the session file (as `bli_memory.settings.session_file` names it, without importing that module
#: and its `json`): without it the daemon has nothing to serve (an environment token goes direct)
SESSION_FILE_PARTS = (".config", "bli-cockpit", "session.json")

#: the reasons this module returns; each means "take the direct path"
UNAVAILABLE = "daemon_unavailable"  # no socket, nobody listening, or it hung up before reading
TIMEOUT = "daemon_timeout"  # the hook's deadline passed while waiting for the answer
BAD_RESPONSE = "daemon_bad_response"  # it answered, but not one readable answer line
MISMATCH = "daemon_version_mismatch"  # an older daemon: it stands down, the hook starts a current one
NEWER = "daemon_version_newer"  # a newer daemon serves; this older hook goes direct and starts nothing
ENV_OVERRIDE = "daemon_env_override"  # this hook's environment holds settings the daemon must not see
TOO_LARGE = "daemon_too_large"  # the payload is over the socket's line cap
DOOR_TIMEOUT = "daemon_door_timeout"  # it answered in its slice that the door timed out: retry direct
REASONS = (UNAVAILABLE, TIMEOUT, BAD_RESPONSE, MISMATCH, NEWER, ENV_OVERRIDE, TOO_LARGE, DOOR_TIMEOUT)
#: after these, the hook should start a daemon (spawn_daemon keeps that to once an hour)
SPAWN_REASONS = (UNAVAILABLE, MISMATCH)

#: variables that decide a folder's space (settings + space.py's git discovery and config order);
#: HOME is not sent: the daemon serving this socket has the same HOME by construction.
SPACE_ENV_NAMES = (
    "BLI_MEMORY_CONTAINER_TAG",
    "BLI_MEMORY_ISOLATE_WORKTREES",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)
#: a hook with any of these set goes direct: they are secrets, or settings the daemon cannot share
DECLINE_ENV_NAMES = (
    "BLI_MEMORY_DEVICE_TOKEN",
    "BLI_MEMORY_DASHBOARD_URL",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)


def version_key(version: str) -> tuple[tuple[int, ...], int, str]:
    """A total order on version strings both sides compute alike: the leading dotted release numbers,
    then a plain release above any suffixed one of the same numbers (`0.2.0rc1` < `0.2.0`), then the
    text itself, so two different strings are never equal and exactly one of two installs is newer."""
    numbers: list[int] = []
    rest = version
    while rest:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        if digits == 0:
            break
        numbers.append(int(rest[:digits]))
        rest = rest[digits:]
        if rest.startswith(".") and rest[1:2].isdigit():
            rest = rest[1:]
        else:
            break
    return tuple(numbers), 0 if rest else 1, version


def is_newer(version: str, than: str) -> bool:
    return version_key(version) > version_key(than)


def state_dir(env: Mapping[str, str] | None = None) -> str:
    """`~/.local/state/bli-cockpit`: the daemon's socket, lock and spawn stamp (and the hook stats)."""
    env = os.environ if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".local", "state", "bli-cockpit")


def socket_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(state_dir(env), SOCKET_NAME)


def has_session(env: Mapping[str, str] | None = None) -> bool:
    """True when this HOME holds a non-empty session file: the daemon would have a door to ask."""
    env = os.environ if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    try:
        info = os.stat(os.path.join(home, *SESSION_FILE_PARTS))
    except OSError:
        return False
    import stat  # already loaded by `os` itself: free

    return info.st_size > 0 and stat.S_ISREG(info.st_mode)


def space_env(env: Mapping[str, str]) -> dict[str, str]:
    """The space-deciding variables this hook has set (sent with each request)."""
    return {name: env[name] for name in SPACE_ENV_NAMES if name in env}


def encode_request(
    event: str, payload: Mapping[str, object], cwd: str, *, budget_s: float, env: Mapping[str, str]
) -> bytes:
    from bli_memory import __version__

    request = {
        "event": event,
        "payload": payload,
        "cwd": os.path.abspath(cwd),
        "version": __version__,
        "budgetMs": max(0, int(budget_s * 1000)),
        "env": space_env(env),
    }
    return tinyjson.dumps(request, compact=True, ensure_ascii=False).encode("utf-8", "replace") + b"\n"


def _read_line(sock: _socket.socket, deadline: float) -> bytes | str:
    """One answer line, or a reason. EOF or a reset before the newline is a bad response."""
    buf = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return TIMEOUT
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(RECV_BYTES)
        except TimeoutError:
            return TIMEOUT
        except OSError:
            return BAD_RESPONSE
        if not chunk:
            return BAD_RESPONSE
        newline = chunk.find(b"\n")
        if newline >= 0:
            buf += chunk[:newline]
            return bytes(buf)
        buf += chunk
        if len(buf) > RESPONSE_MAX_BYTES:
            return BAD_RESPONSE


def exchange(line: bytes, deadline: float, env: Mapping[str, str] | None = None) -> bytes | str:
    """Send one request line and read one answer line before `deadline`; or a reason.

    Connecting gets at most CONNECT_BUDGET_S of the remaining time.
    """
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return TIMEOUT
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(min(CONNECT_BUDGET_S, remaining))
        try:
            sock.connect(socket_path(env))
        except OSError:  # absent, refused (a stale socket), over the budget, path too long
            return UNAVAILABLE
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return TIMEOUT
        sock.settimeout(remaining)
        try:
            sock.sendall(line)
        except TimeoutError:
            return TIMEOUT
        except OSError:  # it hung up before reading: going away (stood down, idle exit, killed)
            return UNAVAILABLE
        return _read_line(sock, deadline)
    finally:
        sock.close()


def decode_answer(line: bytes) -> HookAnswer | str:
    """An answer line → HookAnswer (outcome rebuilt from the receipt allow-list), or a reason."""
    from bli_memory.hooks import receipt
    from bli_memory.hooks.run import HookAnswer

    try:
        data = tinyjson.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):  # UnicodeDecodeError is a ValueError; named for the reader
        return BAD_RESPONSE
    if not isinstance(data, dict):
        return BAD_RESPONSE
    if data.get("error") == VERSION_MISMATCH:
        from bli_memory import __version__

        theirs = data.get("version")
        return NEWER if isinstance(theirs, str) and is_newer(theirs, __version__) else MISMATCH
    stdout = data.get("stdout")
    outcome = receipt.clean(data.get("outcome"))
    if not isinstance(stdout, str) or outcome is None:
        return BAD_RESPONSE
    return HookAnswer(stdout, outcome)


def ask_daemon(
    event: str,
    payload: Mapping[str, object],
    cwd: str,
    *,
    deadline: float,
    env: Mapping[str, str] | None = None,
) -> HookAnswer | str:
    """The daemon's answer to one hook run, or why not (one of REASONS): then take the direct path.

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
    got = exchange(line, slice_end, env)
    return got if isinstance(got, str) else decode_answer(got)


def ask(
    event: str, payload: Mapping[str, object], cwd: str, *, deadline: float
) -> HookAnswer | str:  # the name hooks/run.py looks up
    return ask_daemon(event, payload, cwd, deadline=deadline)


def ping(deadline: float, env: Mapping[str, str] | None = None) -> dict[str, object] | str:
    """`{"ok": true, "version", "pid"}` from a running daemon, or a reason (for `status` and tests)."""
    got = exchange(b'{"event":"ping"}\n', deadline, env)
    if isinstance(got, str):
        return got
    try:
        data = tinyjson.loads(got.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return BAD_RESPONSE
    return data if isinstance(data, dict) and data.get("ok") is True else BAD_RESPONSE


# -- replacing a wedged one ----------------------------------------------------------------------------


def lock_holder(lock_path: str) -> int | None:
    """The pid of the daemon holding the lock at `lock_path`, proven as far as this OS lets us: the
    lock is held (we cannot take it) and, where /proc exists, that pid has this very file open."""
    import fcntl

    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held exclusively: a daemon serves
        except OSError:
            return None
        else:
            return None  # nobody holds it: no daemon to replace (the flock goes with the descriptor)
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not text.isdigit() or int(text) <= 1 or int(text) == os.getpid():
        return None
    pid = int(text)
    if not os.path.isdir("/proc/self/fd"):
        return pid  # no /proc (macOS): the held lock in our own 0700 folder is the proof
    real = os.path.realpath(lock_path)
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None  # gone, or not ours to look at: not ours to kill
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") == real:
                return pid
        except OSError:
            continue
    return None


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
    folder = state_dir(env)
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
    out = {name: value for name, value in env.items() if name not in DECLINE_ENV_NAMES}
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
    stamp = os.path.join(state_dir(env), STAMP_NAME)
    if not force and _spawn_throttled(stamp, __version__, time.time()):
        return None
    if not _write_stamp(stamp, __version__):
        return None
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds()]
    import sys

    argv = [sys.executable, "-m", "bli_memory", "daemon"]
    try:
        return os.posix_spawn(sys.executable, argv, daemon_env(env), file_actions=actions, setsid=True)
    except (OSError, AttributeError, NotImplementedError):  # no posix_spawn (Windows): direct only
        return None
