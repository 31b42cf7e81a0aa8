"""The resident daemon's socket protocol, shared by both ends and by `status`.

One JSON line each way, UTF-8, on `~/.local/state/bli-cockpit/memory-daemon.sock`:

    → {"event": "prompt", "payload": {...}, "cwd": "/abs/folder", "version": "0.1.0",
       "budgetMs": 1900, "env": {"BLI_MEMORY_CONTAINER_TAG": "...", "GIT_CONFIG_GLOBAL": "..."}}
    ← {"stdout": "...", "outcome": {"status": "ok", "hits": 2, ...}}
    ← {"error": "version_mismatch", "version": "0.1.1"}   (it stands down if the caller is newer)
    → {"event": "ping"}   ← {"ok": true, "version": "0.1.0", "pid": 4242, "workers": 4}

`env` carries only the variables that decide a folder's space (never a secret): the daemon reads the
token and the door URL from the session file itself, so the token never crosses the socket.

Here: the file names beside the socket, the reasons a caller gives for not using the daemon, the
version order both sides compute alike, encoding a request, one exchange under a deadline, and
decoding a reply. The hook's policy (when to ask, how much time to give, starting and replacing a
daemon) is `bli_memory.hooks.via_daemon`; the serving side is `bli_memory.daemon`.

This runs inside the prompt and session-start hooks (and `hooks/receipt.py` reads its reasons), so
it imports only `os`, `time`, our `paths` and `tinyjson`, and `_socket` only when it connects: not
`socket` or `json`, whose `enum` and `re` cost about 8 ms of a cold start (tests/hooks/test_imports.py).
"""

from __future__ import annotations

import os
import time

from bli_memory import paths
from bli_memory.wire import tinyjson

TYPE_CHECKING = False  # `typing` costs milliseconds on every hook; mypy reads this constant as True
if TYPE_CHECKING:
    import _socket
    from collections.abc import Mapping

SOCKET_NAME = "memory-daemon.sock"
LOCK_NAME = "memory-daemon.lock"
#: the hook's spawn stamp; the daemon removes it when it stands down for a fresh one
STAMP_NAME = "memory-daemon.spawned"
STATE_DIR_MODE = 0o700
#: connecting gets at most this, taken inside the caller's own unchanged deadline: a local socket
#: that does not accept at once is not going to answer in time
CONNECT_BUDGET_S = 0.05
#: the hook reads at most 4 MiB of payload; a request line is that, re-encoded, plus a little
REQUEST_MAX_BYTES = 4 * 1024 * 1024 + 64 * 1024
#: an answer is one block of at most a few thousand characters and a small outcome
RESPONSE_MAX_BYTES = 1024 * 1024
RECV_BYTES = 64 * 1024
#: the daemon tells its version with every refusal; a request of a newer version makes it stand down
VERSION_MISMATCH = "version_mismatch"
PING_LINE = b'{"event":"ping"}\n'

#: why a caller did not use the daemon's answer; each means "take the direct path"
UNAVAILABLE = "daemon_unavailable"  # no socket, nobody listening, or it hung up before reading
TIMEOUT = "daemon_timeout"  # the hook's deadline passed while waiting for the answer
BAD_RESPONSE = "daemon_bad_response"  # it answered, but not one readable answer line
MISMATCH = "daemon_version_mismatch"  # an older daemon: it stands down, the hook starts a current one
NEWER = "daemon_version_newer"  # a newer daemon serves; this older hook goes direct and starts nothing
ENV_OVERRIDE = "daemon_env_override"  # this hook's environment holds settings the daemon must not see
TOO_LARGE = "daemon_too_large"  # the payload is over the socket's line cap
DOOR_TIMEOUT = "daemon_door_timeout"  # it answered in its slice that the door timed out: retry direct
REASONS = (UNAVAILABLE, TIMEOUT, BAD_RESPONSE, MISMATCH, NEWER, ENV_OVERRIDE, TOO_LARGE, DOOR_TIMEOUT)

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


def socket_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(paths.state_dir(env), SOCKET_NAME)


def lock_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(paths.state_dir(env), LOCK_NAME)


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


def connect(path: str, timeout_s: float) -> _socket.socket:
    """A socket connected to `path` within `timeout_s`; raises OSError as the connect did
    (TimeoutError over the budget), for the caller to name."""
    import _socket  # the C module itself: `socket` wraps its constants in enums (`enum` ~4 ms to import)

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    return sock


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


def converse(sock: _socket.socket, line: bytes, deadline: float) -> bytes | str:
    """On a connected socket: send one request line, read one answer line before `deadline`; or a
    reason. The socket is closed either way."""
    try:
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


def exchange(line: bytes, deadline: float, path: str) -> bytes | str:
    """Send one request line to the socket at `path` and read one answer line before `deadline`; or
    a reason. Connecting gets at most CONNECT_BUDGET_S of the remaining time."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return TIMEOUT
    try:
        sock = connect(path, min(CONNECT_BUDGET_S, remaining))
    except OSError:  # absent, refused (a stale socket), over the budget, path too long
        return UNAVAILABLE
    return converse(sock, line, deadline)


def decode_reply(line: bytes) -> dict[str, object] | str:
    """An answer line → its object; anything that is not one JSON object → BAD_RESPONSE."""
    try:
        data = tinyjson.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):  # UnicodeDecodeError is a ValueError; named for the reader
        return BAD_RESPONSE
    return data if isinstance(data, dict) else BAD_RESPONSE


def version_refusal(reply: Mapping[str, object]) -> str | None:
    """For a daemon's version refusal, NEWER when that daemon is newer than this install, else
    MISMATCH; None for any other reply."""
    if reply.get("error") != VERSION_MISMATCH:
        return None
    from bli_memory import __version__

    theirs = reply.get("version")
    return NEWER if isinstance(theirs, str) and is_newer(theirs, __version__) else MISMATCH


def ping(deadline: float, env: Mapping[str, str] | None = None) -> dict[str, object] | str:
    """`{"ok": true, "version", "pid", "workers"}` from a running daemon, or a reason."""
    got = exchange(PING_LINE, deadline, socket_path(env))
    if isinstance(got, str):
        return got
    data = decode_reply(got)
    return data if isinstance(data, dict) and data.get("ok") is True else BAD_RESPONSE
