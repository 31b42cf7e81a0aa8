"""`bli-memory-mcp daemon`: the resident process that keeps the prompt hook warm (seed README, BLI-3884).

A prompt hook is a fresh process that must connect to the door and prove a token before it asks
anything. This process does that once and keeps it: each worker thread holds its own keep-alive
`wire.http.Connection` (a Connection is not thread-safe), and it answers `prompt` and `session-start`
by calling `hooks.run.answer(..., via="daemon")` — the hook's own code; there is no second
implementation of recall. The protocol is described in `bli_memory.hooks.via_daemon`.

- One per OS user: `~/.local/state/bli-cockpit/memory-daemon.sock`, mode 0600, in a 0700 folder the
  user owns; an `flock`ed `memory-daemon.lock` beside it decides who serves. A second instance exits
  0 with `daemon_already_running`. A socket file left by a crashed daemon (connect refused) is
  replaced.
- The token never crosses the socket: the daemon reads the session file itself, per request (a
  re-login takes effect on the next prompt). Requests carry only the variables that decide a space.
- What is cached: a folder's space, keyed by the folder and those variables, and valid while the
  files space.py read to compute it look the same (their stat signatures), for at most
  SPACE_CACHE_TTL_S (config includes are not tracked file by file).
- Lifecycle: exits after BLI_MEMORY_DAEMON_IDLE_S (default 2 h) without a request; a request of
  another version gets a `version_mismatch` refusal; when the caller's version is NEWER
  (`via_daemon.is_newer`, a total order) the daemon also stands down at once (socket and lock
  released first, so the hook can start a current one), while an older caller just goes direct — two
  installs of different versions settle on the newer daemon instead of retiring each other in turn.
  SIGTERM/SIGINT exit cleanly and remove the socket. It starts no child process. A daemon that stops
  answering (stopped, deadlocked) is replaced by the hook (`via_daemon.replace_wedged`).
- Robustness: a request line is capped (REQUEST_MAX_BYTES), a client that stalls is cut after
  CLIENT_IO_TIMEOUT_S, garbage gets `{"error": "bad_request"}`, and a full queue closes new
  connections at once (the hook then goes direct).

Standard library only; threads plus `selectors` for the accept loop.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import selectors
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Mapping

from bli_memory import __version__
from bli_memory.hooks import via_daemon
from bli_memory.wire.http import Connection, InvalidURL

ENV_IDLE_S = "BLI_MEMORY_DAEMON_IDLE_S"
IDLE_DEFAULT_S = 2 * 3600.0
WORKER_COUNT = 4
LISTEN_BACKLOG = 64
#: connections waiting for a worker beyond this are closed at once: the hook goes direct
QUEUE_MAX = 64
REQUEST_MAX_BYTES = via_daemon.REQUEST_MAX_BYTES
#: a client that connects and does not finish its line (or read the answer) within this is dropped
CLIENT_IO_TIMEOUT_S = 2.0
#: how long a starting daemon waits for the lock while the holder is not answering (standing down)
LOCK_WAIT_S = 3.0
LOCK_POLL_S = 0.02
STALE_PROBE_S = 0.2
#: how long a worker gets to finish its request at shutdown
JOIN_TIMEOUT_S = 3.0
SPACE_CACHE_TTL_S = 60.0
SPACE_CACHE_MAX_ENTRIES = 512
SOCKET_MODE = 0o600
#: the AF_UNIX path limit on Linux (108 with the terminating NUL; macOS has 104)
SOCKET_PATH_MAX_BYTES = 103
DAEMON_EVENTS = ("prompt", "session-start")

USAGE = "usage: bli-memory-mcp daemon   (one per OS user; the prompt hook starts it for you)"


class DaemonSetupError(Exception):
    """The daemon cannot serve safely (folder not private, path not a socket, too long)."""


def _say(text: str) -> None:
    """One line on stderr: no prompt, path under a project, or token ever goes here."""
    with contextlib.suppress(OSError):
        os.write(2, f"bli-memory-mcp daemon: {text}\n".encode())


def idle_limit_s(env: Mapping[str, str]) -> float:
    try:
        value = float(env.get(ENV_IDLE_S, ""))
    except ValueError:
        return IDLE_DEFAULT_S
    return value if value > 0 else IDLE_DEFAULT_S


# -- the space cache -----------------------------------------------------------------------------------

StatSig = tuple[int, int, int] | None


def _stat_sig(path: str) -> StatSig:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def space_inputs(cwd: str, env: Mapping[str, str]) -> list[str]:
    """The files and folders space.py reads (or looks for) to compute the space of `cwd`.

    Folders from `cwd` up to the work tree's root (a `.git` appearing or vanishing in any of them
    changes that folder's mtime), the repository's own files, and the system and global configs.
    """
    from bli_memory.space import find_repository

    real = os.path.realpath(cwd)
    repo = find_repository(real, env) if os.path.isdir(real) else None
    stop = repo.top_level or repo.git_dir if repo is not None else None
    paths = []
    current = real
    while True:
        paths.append(current)
        parent = os.path.dirname(current)
        if current == stop or parent == current:
            break
        current = parent
    if repo is not None:
        if repo.top_level is not None:
            paths.append(os.path.join(repo.top_level, ".git"))
        for name in ("HEAD", "commondir", "config.worktree"):
            paths.append(os.path.join(repo.git_dir, name))
        paths.append(os.path.join(repo.common_dir, "config"))
    home = env.get("HOME") or os.path.expanduser("~")
    paths.append(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if "GIT_CONFIG_GLOBAL" in env:
        paths.append(env["GIT_CONFIG_GLOBAL"])
    else:
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        paths += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    return paths


class SpaceCache:
    """A folder's space (container tag), kept while what it was computed from looks unchanged."""

    def __init__(self, ttl_s: float = SPACE_CACHE_TTL_S, max_entries: int = SPACE_CACHE_MAX_ENTRIES) -> None:
        self._ttl_s = ttl_s
        self._max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: dict[tuple[object, ...], tuple[str, list[str], list[StatSig], str, float]] = {}
        self.hits = 0
        self.misses = 0

    def tag(self, isolate_worktrees: bool, cwd: str, env: Mapping[str, str]) -> str:
        from bli_memory.settings import Settings
        from bli_memory.space import resolve_space_of

        key = (cwd, isolate_worktrees, tuple(sorted(env.items())))
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None:
            tag, paths, sigs, real, expires = entry
            if now < expires and os.path.realpath(cwd) == real and [_stat_sig(p) for p in paths] == sigs:
                self.hits += 1
                return tag
        self.misses += 1
        # what it depends on is read BEFORE computing it: a change in between only costs a miss later
        paths = space_inputs(cwd, env)
        sigs = [_stat_sig(p) for p in paths]
        real = os.path.realpath(cwd)
        settings = Settings(None, None, None, isolate_worktrees, True)
        tag = resolve_space_of(settings, cwd, env).tag
        with self._lock:
            if len(self._entries) >= self._max_entries:
                self._entries.clear()
            self._entries[key] = (tag, paths, sigs, real, now + self._ttl_s)
        return tag


# -- one request ---------------------------------------------------------------------------------------


class Refusal(Exception):
    """A request the daemon will not answer; `code` goes back as `{"error": code}`."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class Worker:
    """One thread's state: its own warm door connection (Connections are not thread-safe)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._url: str | None = None
        self._connection: Connection | None = None

    def connection(self, url: str) -> Connection:
        if self._connection is None or self._url != url:
            self.close()
            self._connection = Connection(url)
            self._url = url
        return self._connection

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def answer(self, request: dict[str, object]) -> dict[str, object]:
        """The reply to one parsed request line (raises Refusal for one it will not answer)."""
        from bli_memory.hooks.run import DEADLINE_S, answer
        from bli_memory.settings import Settings, load_settings

        event = request.get("event")
        if event == "ping":
            return {"ok": True, "version": __version__, "pid": os.getpid()}
        version = request.get("version")
        if not isinstance(version, str) or not version:
            raise Refusal("bad_request")  # garbage is not another version: it must not stop the daemon
        if version != __version__:
            # only a newer caller retires us; an older one is refused and goes direct, so two installs
            # of different versions never take turns standing each other down
            if via_daemon.is_newer(version, __version__):
                self.server.stand_down(via_daemon.VERSION_MISMATCH)
                # a hook that finds no daemon next must start one now, not after the hourly stamp
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.server.folder, via_daemon.STAMP_NAME))
            return {"error": via_daemon.VERSION_MISMATCH, "version": __version__}
        payload, cwd = request.get("payload"), request.get("cwd")
        if event not in DAEMON_EVENTS:
            raise Refusal("unsupported_event")
        if not isinstance(payload, dict) or not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise Refusal("bad_request")
        assert isinstance(event, str)
        started = time.monotonic()
        budget_ms = request.get("budgetMs")
        budget_s = DEADLINE_S[event]
        if isinstance(budget_ms, int) and not isinstance(budget_ms, bool) and budget_ms >= 0:
            budget_s = min(budget_s, budget_ms / 1000.0)
        env = self.server.request_env(request.get("env"))
        settings = load_settings(env)  # the session file, read here: the token never crosses the socket
        connection = None
        if settings.paired:
            if not settings.container_tag:  # an override (BLI_MEMORY_CONTAINER_TAG) wins, as in space.py
                tag = self.server.spaces.tag(settings.isolate_worktrees, cwd, env)
                settings = Settings(
                    settings.door_url,
                    settings.token,
                    tag,
                    settings.isolate_worktrees,
                    settings.daemon_enabled,
                )
            try:
                connection = self.connection(str(settings.door_url))
            except InvalidURL:
                connection = None  # answer() meets the same URL and names it bad_config
        result = answer(
            event,
            payload,
            cwd,
            via="daemon",
            deadline=started + budget_s,
            settings=settings,
            connection=connection,
        )
        return {"stdout": result.stdout, "outcome": result.outcome}

    def serve(self, sock: socket.socket) -> None:
        """Read one line, answer it, close. Never raises: a bad client costs only its connection."""
        try:
            sock.settimeout(CLIENT_IO_TIMEOUT_S)
            line = _read_request_line(sock)
            if line is None:
                return
            try:
                request = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                request = None
            try:
                if not isinstance(request, dict):
                    raise Refusal("bad_request")
                reply = self.answer(request)
            except Refusal as refusal:
                reply = {"error": refusal.code}
            except Exception as exc:  # a bug must not take the daemon down; the hook goes direct
                reply = {"error": "internal", "kind": type(exc).__name__}
            data = json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace")
            sock.sendall(data + b"\n")
        except OSError:
            pass  # the client went away or stalled: nothing to tell it
        finally:
            sock.close()

    def run(self) -> None:
        try:
            while True:
                sock = self.server.pending.get()
                if sock is None:
                    return
                self.serve(sock)
        finally:
            self.close()


def _read_request_line(sock: socket.socket) -> bytes | None:
    """The first line the client sends, or None (EOF; or over the cap, answered with too_large)."""
    buf = bytearray()
    while True:
        chunk = sock.recv(via_daemon.RECV_BYTES)
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        buf += chunk if newline < 0 else chunk[:newline]
        if len(buf) > REQUEST_MAX_BYTES:
            sock.sendall(b'{"error":"too_large"}\n')
            return None
        if newline >= 0:
            return bytes(buf)


# -- the server ----------------------------------------------------------------------------------------


def _private_dir(path: str) -> None:
    """Make `path` a folder only this user can enter (0700), or refuse."""
    try:
        os.makedirs(path, mode=via_daemon.STATE_DIR_MODE, exist_ok=True)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise DaemonSetupError(f"{path} is not a folder of this user")
        if stat.S_IMODE(info.st_mode) != via_daemon.STATE_DIR_MODE:
            os.chmod(path, via_daemon.STATE_DIR_MODE)
    except OSError as exc:
        raise DaemonSetupError(f"cannot make {path} private: {exc.strerror}") from None


def _answers(path: str) -> bool:
    """True when something accepts connections on the socket at `path` (a live daemon)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(STALE_PROBE_S)
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


class Server:
    """The listening socket, the lock that makes it the only one, the workers, and the shutdown."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.home = env.get("HOME") or os.path.expanduser("~")
        self.folder = via_daemon.state_dir(env)
        self.path = via_daemon.socket_path(env)
        self.idle_s = idle_limit_s(env)
        self.spaces = SpaceCache()
        self.pending: queue.Queue[socket.socket | None] = queue.Queue(QUEUE_MAX)
        self.stop_reason: str | None = None
        self.requests = 0
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None
        self._socket_ino: int | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_w.setblocking(False)

    # -- the environment of one request

    def request_env(self, sent: object) -> dict[str, str]:
        """HOME (ours: the socket lives under it) plus the space variables the hook sent, nothing else."""
        env = {"HOME": self.home}
        if isinstance(sent, dict):
            for name in via_daemon.SPACE_ENV_NAMES:
                value = sent.get(name)
                if isinstance(value, str):
                    env[name] = value
        return env

    # -- start-up

    def _try_lock(self) -> bool:
        import fcntl

        fd = os.open(os.path.join(self.folder, via_daemon.LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd
        return True

    def _someone_current(self) -> bool:
        """A daemon of this version answers a ping: we are the second instance."""
        got = via_daemon.ping(time.monotonic() + STALE_PROBE_S, {"HOME": self.home})
        return isinstance(got, dict) and got.get("version") == __version__

    def acquire(self) -> bool:
        """Take the lock (waiting a little for one that is standing down); False: another serves."""
        _private_dir(self.folder)
        if len(os.fsencode(self.path)) > SOCKET_PATH_MAX_BYTES:
            raise DaemonSetupError("the socket path is too long for a unix socket (HOME is too deep)")
        give_up = time.monotonic() + LOCK_WAIT_S
        while not self._try_lock():
            if self._someone_current() or time.monotonic() >= give_up:
                return False
            time.sleep(LOCK_POLL_S)
        return True

    def bind(self) -> None:
        """Listen on the socket path; a leftover socket nobody answers on (a crash) is replaced."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        if info is not None:
            if not stat.S_ISSOCK(info.st_mode):
                raise DaemonSetupError(f"{self.path} exists and is not a socket; remove it")
            if _answers(self.path):  # holds no lock yet answers: an older daemon without one
                raise DaemonSetupError("daemon_already_running")
            _say("replacing a stale socket (connect refused)")
            os.unlink(self.path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # created 0600: no moment when others could connect
        try:
            listener.bind(self.path)
        finally:
            os.umask(old_umask)
        os.chmod(self.path, SOCKET_MODE)
        listener.listen(LISTEN_BACKLOG)
        listener.setblocking(False)
        self._listener = listener
        self._socket_ino = os.lstat(self.path).st_ino

    # -- shutdown

    def stand_down(self, reason: str) -> None:
        """Ask the accept loop to stop (from any thread or a signal handler)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def release(self) -> None:
        """Give up the socket path and the lock, so a new daemon can start right away."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            with contextlib.suppress(OSError):
                if os.lstat(self.path).st_ino == self._socket_ino:  # never remove a successor's socket
                    os.unlink(self.path)
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    # -- the loop

    def _accept_all(self) -> None:
        assert self._listener is not None
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # e.g. EMFILE: the client sees a refused/closed connection and goes direct
            sock.setblocking(True)
            self.requests += 1
            try:
                self.pending.put_nowait(sock)
            except queue.Full:
                sock.close()

    def serve_forever(self) -> str:
        """Accept until idle, stood down or signalled; returns why it stopped."""
        assert self._listener is not None
        workers = [Worker(self) for _ in range(WORKER_COUNT)]
        threads = [
            threading.Thread(target=w.run, name=f"bli-daemon-{i}", daemon=True) for i, w in enumerate(workers)
        ]
        for thread in threads:
            thread.start()
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, "accept")
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        last_active = time.monotonic()
        try:
            while self.stop_reason is None:
                idle_left = last_active + self.idle_s - time.monotonic()
                if idle_left <= 0:
                    self.stop_reason = "idle"
                    break
                for key, _ in selector.select(timeout=idle_left):
                    if key.data == "accept":
                        self._accept_all()
                        last_active = time.monotonic()
                    else:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(64)
        finally:
            selector.close()
            self.release()
            for _ in threads:
                self.pending.put(None)
            for thread in threads:
                thread.join(JOIN_TIMEOUT_S)
            self._wake_r.close()
            self._wake_w.close()
        return self.stop_reason or "stopped"


def _on_signal(server: Server) -> None:
    def handler(signum: int, frame: object) -> None:
        server.stand_down(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGHUP, handler)


def main(argv: list[str]) -> int:
    """Serve until idle, stood down or signalled. 0 also when another daemon already serves."""
    if argv and argv[0] in ("--help", "-h", "help"):
        sys.stdout.write(USAGE + "\n")
        return 0
    if argv:
        sys.stderr.write(f"bli-memory-mcp daemon: unexpected argument {argv[0]!r}; {USAGE}\n")
        return 2
    env = dict(os.environ)
    with contextlib.suppress(OSError):
        os.chdir("/")  # never pin the folder of the hook that started it
    server = Server(env)
    try:
        if not server.acquire():
            _say("daemon_already_running")
            return 0
        _on_signal(server)
        server.bind()
    except DaemonSetupError as exc:
        server.release()
        if str(exc) == "daemon_already_running":
            _say("daemon_already_running")
            return 0
        _say(str(exc))
        return 1
    _say(f"listening (pid {os.getpid()}, version {__version__}, idle exit after {server.idle_s:g} s)")
    reason = server.serve_forever()
    _say(f"exiting: {reason} after {server.requests} requests")
    return 0
