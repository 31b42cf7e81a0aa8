"""`bli-memory-mcp daemon`: the resident process that keeps the prompt hook warm, so a prompt pays
for one local socket exchange instead of an interpreter's imports, a door connection and a token check.

A prompt hook is a fresh process that must connect to the door and prove a token before it asks
anything. This process does that once and keeps it: each worker thread holds its own keep-alive
`wire.http.Connection` (a Connection is not thread-safe), and it answers `prompt` and `session-start`
by calling `hooks.run.answer(..., via="daemon")` — the hook's own code; there is no second
implementation of recall. The socket protocol is `bli_memory.daemon_wire`; the hook's side of it
(when to ask, starting and replacing a daemon) is `bli_memory.hooks.via_daemon`.

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
  (`daemon_wire.is_newer`, a total order) the daemon also stands down at once (socket and lock
  released first, so the hook can start a current one), while an older caller just goes direct — two
  installs of different versions settle on the newer daemon instead of retiring each other in turn.
  SIGTERM/SIGINT exit cleanly and remove the socket. It starts no child process. A daemon that stops
  answering (stopped, deadlocked) is replaced by the hook (`via_daemon.replace_wedged`).
- Robustness: the accept loop itself reads every request line (non-blocking), so a worker only ever
  sees a whole line: a client has REQUEST_READ_S from its connect to finish its line, in total (a
  client trickling a byte at a time is cut then, and holds no worker meanwhile). A line is capped
  (REQUEST_MAX_BYTES), so are the connections being read (READING_MAX) and the bytes held for them
  (HELD_MAX_BYTES). A ping is answered by the loop at once, so it proves the loop runs. Any failure
  of one request (garbage, `RecursionError` from deeply nested JSON, `MemoryError`, a bug) is that
  request's error reply; the worker lives on. While it has work, every HEALTH_CHECK_S the loop
  restarts a worker that died anyway, and when every worker is stuck (still on a request STUCK_GRACE_S after its deadline,
  e.g. blocked reading a FIFO) the daemon stands down at once ("wedged", spawn stamp removed), so
  the next hook starts a fresh one instead of waiting out its slice on every prompt.
- `bli-memory-mcp daemon stop` stops this user's daemon (by the pid its lock file records).

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

from bli_memory import __version__, daemon_wire, paths
from bli_memory.hooks.answer import DAEMON_EVENTS, DEADLINE_S
from bli_memory.wire.http import Connection, InvalidURL

ENV_IDLE_S = "BLI_MEMORY_DAEMON_IDLE_S"
IDLE_DEFAULT_S = 2 * 3600.0
WORKER_COUNT = 4
LISTEN_BACKLOG = 64
#: connections waiting for a worker beyond this are closed at once: the hook goes direct
QUEUE_MAX = 64
REQUEST_MAX_BYTES = daemon_wire.REQUEST_MAX_BYTES
#: a client must send its whole request line within this of connecting (one deadline, not per recv)
REQUEST_READ_S = 2.0
#: sending the answer line (a few KB into an empty socket buffer) gets at most this
REPLY_SEND_S = 1.0
#: connections whose request line is still arriving; more are closed at once (the hook goes direct)
READING_MAX = 128
#: request bytes held at once (lines being read or waiting for a worker); over it, a client is closed
HELD_MAX_BYTES = 4 * REQUEST_MAX_BYTES
#: a line this short may be a ping, which the accept loop answers itself
PING_LINE_MAX_BYTES = 256
#: how often the accept loop checks its workers
HEALTH_CHECK_S = 0.5
#: a worker still on a request this long after the request's deadline is stuck (it cannot be freed)
STUCK_GRACE_S = 2.0
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
#: the stop reason when every worker is stuck: the daemon gives up its socket for a fresh one
WEDGED = "wedged"
#: after these stop reasons the spawn stamp is removed, so the next hook starts a daemon at once
RESTART_AT_ONCE_REASONS = (daemon_wire.VERSION_MISMATCH, WEDGED)

USAGE = """usage: bli-memory-mcp daemon [stop]

  bli-memory-mcp daemon        run this user's resident daemon (the prompt hook starts it for you;
                               it exits by itself after 2 h without a request)
  bli-memory-mcp daemon stop   stop this user's daemon, found by the pid its lock file records
                               (~/.local/state/bli-cockpit/memory-daemon.lock); says what it stopped
                               or that none runs

exit status of `stop`: 0 when no daemon runs afterwards (it stopped one, or none ran),
1 when one still runs (it could not be stopped, or what answers on the socket is not provably
this user's daemon), 2 for a bad argument.
Hooks work without the daemon (they take the direct path); the next prompt starts a new one."""
#: how long `daemon stop` waits for SIGTERM, then for SIGKILL, to take effect
STOP_WAIT_S = 5.0
KILL_WAIT_S = 2.0
STOP_POLL_S = 0.02


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
    inputs = []
    current = real
    while True:
        inputs.append(current)
        parent = os.path.dirname(current)
        if current == stop or parent == current:
            break
        current = parent
    if repo is not None:
        if repo.top_level is not None:
            inputs.append(os.path.join(repo.top_level, ".git"))
        for name in ("HEAD", "commondir", "config.worktree"):
            inputs.append(os.path.join(repo.git_dir, name))
        inputs.append(os.path.join(repo.common_dir, "config"))
    home = paths.home_dir(env)
    inputs.append(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if "GIT_CONFIG_GLOBAL" in env:
        inputs.append(env["GIT_CONFIG_GLOBAL"])
    else:
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        inputs += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    return inputs


class SpaceCache:
    """A folder's space tag, kept while what it was computed from looks unchanged."""

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


class PendingRequest:
    """A whole request line the accept loop read, waiting for a worker."""

    __slots__ = ("accepted", "line", "sock")

    def __init__(self, sock: socket.socket, line: bytes, accepted: float) -> None:
        self.sock = sock
        self.line = line
        self.accepted = accepted


def parse_request(line: bytes) -> dict[str, object]:
    """A request line → its object; Refusal("bad_request") for anything else, however it fails
    (not JSON, not UTF-8, not an object, nested deeper than the parser's recursion limit)."""
    try:
        request = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise Refusal("bad_request") from None
    if not isinstance(request, dict):
        raise Refusal("bad_request")
    return request


def encode_reply(reply: Mapping[str, object]) -> bytes:
    return json.dumps(reply, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "replace") + b"\n"


class DaemonWorker:
    """One of the daemon's threads answering hook requests (the door's own background thread is its
    `ExtractionWorker`, in the other program): its warm door connection (Connections are not
    thread-safe), and when its current request counts as stuck (read by the accept loop's health check)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._url: str | None = None
        self._connection: Connection | None = None
        #: `time.monotonic()` after which the request in hand means this worker is stuck; None: idle
        self.stuck_after: float | None = None

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

    def answer(self, request: dict[str, object], accepted: float) -> dict[str, object]:
        """The reply to one parsed request (raises Refusal for one it will not answer).

        `accepted` is when its connection was accepted: the request's budget counts from there.
        """
        from bli_memory.hooks.run import answer
        from bli_memory.settings import Settings, load_settings

        event = request.get("event")
        if event == "ping":
            return self.server.pong()
        version = request.get("version")
        if not isinstance(version, str) or not version:
            raise Refusal("bad_request")  # garbage is not another version: it must not stop the daemon
        if version != __version__:
            # only a newer caller retires us; an older one is refused and goes direct, so two installs
            # of different versions never take turns standing each other down
            if daemon_wire.is_newer(version, __version__):
                self.server.stand_down(daemon_wire.VERSION_MISMATCH)
            return {"error": daemon_wire.VERSION_MISMATCH, "version": __version__}
        payload, cwd = request.get("payload"), request.get("cwd")
        if event not in DAEMON_EVENTS:
            raise Refusal("unsupported_event")
        if not isinstance(payload, dict) or not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise Refusal("bad_request")
        assert isinstance(event, str)
        budget_ms = request.get("budgetMs")
        budget_s = DEADLINE_S[event]
        if isinstance(budget_ms, int) and not isinstance(budget_ms, bool) and budget_ms >= 0:
            budget_s = min(budget_s, budget_ms / 1000.0)
        deadline = accepted + budget_s
        self.stuck_after = deadline + STUCK_GRACE_S
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
            deadline=deadline,
            settings=settings,
            connection=connection,
        )
        return {"stdout": result.stdout, "outcome": result.outcome}

    def reply_to(self, job: PendingRequest) -> dict[str, object]:
        """The reply to one request line, whatever happens while answering it."""
        try:
            return self.answer(parse_request(job.line), job.accepted)
        except Refusal as refusal:
            return {"error": refusal.code}
        except Exception as exc:  # MemoryError, a bug: this request's error, never the worker's end
            return {"error": "internal", "kind": type(exc).__name__}

    def serve(self, job: PendingRequest) -> None:
        """Answer one request and close its connection. Never raises an Exception."""
        try:
            data = encode_reply(self.reply_to(job))
            job.sock.settimeout(REPLY_SEND_S)
            job.sock.sendall(data)
        except Exception:
            pass  # the client went away or does not read: nothing to tell it
        finally:
            job.sock.close()
            self.server.unhold(len(job.line))

    def run(self) -> None:
        try:
            while True:
                job = self.server.pending.get()
                if job is None:
                    return
                self.stuck_after = time.monotonic() + STUCK_GRACE_S  # answer() sets the real one
                try:
                    self.serve(job)
                finally:
                    self.stuck_after = None
        finally:
            self.close()


# -- the server ----------------------------------------------------------------------------------------


def _private_dir(path: str) -> None:
    """Make `path` a folder only this user can enter (0700), or refuse."""
    try:
        os.makedirs(path, mode=daemon_wire.STATE_DIR_MODE, exist_ok=True)
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise DaemonSetupError(f"{path} is not a folder of this user")
        if stat.S_IMODE(info.st_mode) != daemon_wire.STATE_DIR_MODE:
            os.chmod(path, daemon_wire.STATE_DIR_MODE)
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


class Reading:
    """A connection whose request line is still arriving: read by the accept loop, never a worker."""

    __slots__ = ("accepted", "buf", "deadline", "sock")

    def __init__(self, sock: socket.socket, accepted: float) -> None:
        self.sock = sock
        self.accepted = accepted
        self.deadline = accepted + REQUEST_READ_S
        self.buf = bytearray()


def _is_ping(line: bytes) -> bool:
    try:
        request = json.loads(line)
    except Exception:  # short, so never deep; whatever it is, a worker will name it
        return False
    return isinstance(request, dict) and request.get("event") == "ping"


class Server:
    """The listening socket, the lock that makes it the only one, the workers, and the shutdown."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.home = paths.home_dir(env)
        self.folder = paths.state_dir(env)
        self.path = daemon_wire.socket_path(env)
        self.idle_s = idle_limit_s(env)
        self.spaces = SpaceCache()
        self.pending: queue.Queue[PendingRequest | None] = queue.Queue(QUEUE_MAX)
        self.stop_reason: str | None = None
        self.requests = 0
        self.workers: list[tuple[DaemonWorker, threading.Thread]] = []
        #: connections whose request line is still arriving, each with its own buffer and deadline
        self.reading: set[Reading] = set()
        self._held_bytes = 0
        self._held_lock = threading.Lock()
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None
        self._socket_ino: int | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_w.setblocking(False)

    # -- what one request needs from the server

    def pong(self) -> dict[str, object]:
        """The answer to a ping: who serves, and how many workers can take a request."""
        now = time.monotonic()
        usable = sum(
            1
            for worker, thread in self.workers
            if thread.is_alive() and (worker.stuck_after is None or now <= worker.stuck_after)
        )
        return {"ok": True, "version": __version__, "pid": os.getpid(), "workers": usable}

    def hold(self, size: int) -> bool:
        """Count `size` more request bytes held; False (nothing counted) when that is over the cap."""
        with self._held_lock:
            if self._held_bytes + size > HELD_MAX_BYTES:
                return False
            self._held_bytes += size
            return True

    def unhold(self, size: int) -> None:
        with self._held_lock:
            self._held_bytes -= size

    def request_env(self, sent: object) -> dict[str, str]:
        """HOME (ours: the socket lives under it) plus the space variables the hook sent, nothing else."""
        env = {"HOME": self.home}
        if isinstance(sent, dict):
            for name in daemon_wire.SPACE_ENV_NAMES:
                value = sent.get(name)
                if isinstance(value, str):
                    env[name] = value
        return env

    # -- start-up

    def _try_lock(self) -> bool:
        import fcntl

        fd = os.open(os.path.join(self.folder, daemon_wire.LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
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
        got = daemon_wire.ping(time.monotonic() + STALE_PROBE_S, {"HOME": self.home})
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
        if self.stop_reason in RESTART_AT_ONCE_REASONS:
            # a hook that finds no daemon next must start one now, not after the hourly spawn stamp
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.folder, daemon_wire.STAMP_NAME))
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    # -- the loop

    def _accept_all(self, selector: selectors.BaseSelector, now: float) -> None:
        """Take every waiting connection; each gets REQUEST_READ_S from now to send its whole line."""
        assert self._listener is not None
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # e.g. EMFILE: the client sees a refused/closed connection and goes direct
            self.requests += 1
            if len(self.reading) >= READING_MAX:
                sock.close()  # the hook reads EOF and goes direct
                continue
            sock.setblocking(False)
            reading = Reading(sock, now)
            self.reading.add(reading)
            selector.register(sock, selectors.EVENT_READ, reading)

    def _drop(self, selector: selectors.BaseSelector, reading: Reading, reply: bytes = b"") -> None:
        """Stop reading a connection: say `reply` if there is room for it, and close it."""
        self.reading.discard(reading)
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(reading.sock)
        self.unhold(len(reading.buf))
        if reply:
            with contextlib.suppress(OSError):
                reading.sock.send(reply)
        reading.sock.close()

    def _read(self, selector: selectors.BaseSelector, reading: Reading) -> None:
        """Take what one connection has sent; a whole line goes to `_dispatch`."""
        try:
            chunk = reading.sock.recv(daemon_wire.RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(selector, reading)  # hung up before its newline
            return
        newline = chunk.find(b"\n")
        part = chunk if newline < 0 else chunk[:newline]
        if len(reading.buf) + len(part) > REQUEST_MAX_BYTES:
            self._drop(selector, reading, b'{"error":"too_large"}\n')
            return
        if not self.hold(len(part)):
            self._drop(selector, reading, b'{"error":"busy"}\n')
            return
        reading.buf += part
        if newline >= 0:
            self.reading.discard(reading)
            selector.unregister(reading.sock)
            self._dispatch(reading)

    def _dispatch(self, reading: Reading) -> None:
        """A whole line: a ping is answered here (so a ping proves this loop runs), the rest is queued."""
        line = bytes(reading.buf)
        sock = reading.sock
        if len(line) <= PING_LINE_MAX_BYTES and _is_ping(line):
            with contextlib.suppress(OSError):
                sock.send(encode_reply(self.pong()))  # a few dozen bytes into an empty buffer
            sock.close()
            self.unhold(len(line))
            return
        sock.setblocking(True)
        try:
            self.pending.put_nowait(PendingRequest(sock, line, reading.accepted))
        except queue.Full:
            sock.close()  # the hook reads EOF and goes direct
            self.unhold(len(line))

    def _expire(self, selector: selectors.BaseSelector, now: float) -> float:
        """Close connections past their read deadline; the next deadline still ahead (inf: none)."""
        soonest = float("inf")
        for reading in list(self.reading):
            if now >= reading.deadline:
                self._drop(selector, reading)
            else:
                soonest = min(soonest, reading.deadline)
        return soonest

    def _start_worker(self, index: int) -> tuple[DaemonWorker, threading.Thread]:
        worker = DaemonWorker(self)
        thread = threading.Thread(target=worker.run, name=f"bli-daemon-{index}", daemon=True)
        thread.start()
        return worker, thread

    def _busy(self) -> bool:
        """Work in hand: a line being read, one waiting for a worker, or a worker on a request."""
        return bool(self.reading) or not self.pending.empty() or any(w.stuck_after for w, _ in self.workers)

    def check_workers(self, now: float) -> None:
        """Restart a worker that died; stand down ("wedged") when every worker is stuck."""
        for index, (_, thread) in enumerate(self.workers):
            if not thread.is_alive():
                self.workers[index] = self._start_worker(index)
                _say(f"worker {index} ended unexpectedly; restarted")
        stuck = [w for w, _ in self.workers if w.stuck_after is not None and now > w.stuck_after]
        if self.workers and len(stuck) == len(self.workers):
            _say(f"all {len(stuck)} workers are stuck on a request long past its deadline")
            self.stand_down(WEDGED)

    def _close_pending(self) -> None:
        """Close every queued connection (their hooks go direct) so the stop signals fit the queue."""
        while True:
            try:
                job = self.pending.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                job.sock.close()
                self.unhold(len(job.line))

    def serve_forever(self) -> str:
        """Accept until idle, stood down or signalled; returns why it stopped."""
        assert self._listener is not None
        self.workers = [self._start_worker(index) for index in range(WORKER_COUNT)]
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, "accept")
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        now = last_active = time.monotonic()
        next_check = float("inf")  # checks run while there is work: an idle daemon sleeps until its exit
        next_expiry = float("inf")
        try:
            while self.stop_reason is None:
                idle_left = last_active + self.idle_s - now
                if idle_left <= 0:
                    self.stop_reason = "idle"
                    break
                timeout = max(0.0, min(idle_left, next_check - now, next_expiry - now))
                for key, _ in selector.select(timeout=timeout):
                    if key.data == "accept":
                        self._accept_all(selector, time.monotonic())
                        last_active = time.monotonic()
                        next_check = min(next_check, last_active + HEALTH_CHECK_S)
                    elif key.data == "wake":
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(64)
                    else:
                        self._read(selector, key.data)
                now = time.monotonic()
                next_expiry = self._expire(selector, now)
                if now >= next_check:
                    self.check_workers(now)
                    next_check = now + HEALTH_CHECK_S if self._busy() else float("inf")
        finally:
            for reading in list(self.reading):
                self._drop(selector, reading)
            selector.close()
            self.release()
            self._close_pending()
            for _ in self.workers:
                self.pending.put_nowait(None)
            # one wait for all; none when they are stuck (they never end: the process exits around them)
            give_up = time.monotonic() + (0.0 if self.stop_reason == WEDGED else JOIN_TIMEOUT_S)
            for _, thread in self.workers:
                thread.join(max(0.0, give_up - time.monotonic()))
            self._wake_r.close()
            self._wake_w.close()
        return self.stop_reason or "stopped"


def _on_signal(server: Server) -> None:
    def handler(signum: int, frame: object) -> None:
        server.stand_down(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGHUP, handler)


# -- `daemon stop` -------------------------------------------------------------------------------------


def _lock_free(lock_path: str) -> bool:
    """True when nobody holds the daemon lock (the holder exited, or there never was one)."""
    import fcntl

    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # our shared lock, if we got one, goes with the descriptor
    return True


def _wait_lock_free(lock_path: str, timeout_s: float) -> bool:
    give_up = time.monotonic() + timeout_s
    while not _lock_free(lock_path):
        if time.monotonic() >= give_up:
            return False
        time.sleep(STOP_POLL_S)
    return True


def stop(env: Mapping[str, str]) -> tuple[int, str]:
    """Stop this user's daemon: (exit status, the one line that says what happened).

    The daemon is the process holding the lock file, proven by `daemon_wire.lock_holder` (on Linux:
    that pid has this very file open), so a recycled pid or a stranger's process is never signalled.
    SIGTERM first (with SIGCONT, so a stopped one acts on it); SIGKILL if it has not let go of the
    lock within STOP_WAIT_S, and the socket file a killed daemon leaves is removed.
    """
    lock_path = daemon_wire.lock_path(env)
    path = daemon_wire.socket_path(env)
    pid = daemon_wire.lock_holder(lock_path)
    if pid is None:
        if _answers(path):
            return 1, f"a process listens on {path} but holds no daemon lock; not stopping it"
        if _remove_stale_socket(path):
            return 0, f"no daemon runs (removed the socket a crashed one left at {path})"
        return 0, "no daemon runs"
    pong = daemon_wire.ping(time.monotonic() + STALE_PROBE_S, env)
    who = f"pid {pid}" + (
        f", version {pong['version']}" if isinstance(pong, dict) and "version" in pong else ""
    )
    for signum in (signal.SIGTERM, signal.SIGCONT):  # CONT: a stopped process acts on TERM only then
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    if _wait_lock_free(lock_path, STOP_WAIT_S):
        _remove_stale_socket(path)
        return 0, f"stopped the daemon ({who})"
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if not _wait_lock_free(lock_path, KILL_WAIT_S):
        return 1, f"could not stop the daemon ({who})"
    _remove_stale_socket(path)
    return 0, f"killed the daemon ({who}): it did not stop within {STOP_WAIT_S:g} s of SIGTERM"


def _remove_stale_socket(path: str) -> bool:
    """Remove a socket file nobody listens on (a killed daemon's); True when one was removed."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISSOCK(info.st_mode) or _answers(path):
        return False
    with contextlib.suppress(OSError):
        os.unlink(path)
        return True
    return False


def allow_next_spawn(env: Mapping[str, str]) -> None:
    """Remove the hook's spawn stamp, so the next prompt starts a daemon at once: a person stopped it
    on purpose, which is no crash, and must not count against the hourly limit on spawns."""
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(paths.state_dir(env), daemon_wire.STAMP_NAME))


def stop_main(argv: list[str]) -> int:
    if argv:
        sys.stderr.write(f"bli-memory-mcp daemon stop: unexpected argument {argv[0]!r}\n{USAGE}\n")
        return 2
    env = dict(os.environ)
    status, text = stop(env)
    if status == 0:
        allow_next_spawn(env)
    (sys.stdout if status == 0 else sys.stderr).write(f"bli-memory-mcp daemon: {text}\n")
    return status


def warm_redactor() -> None:
    """Load the redactor and compile its patterns once, before the first request: the prompt hook's
    query is masked here on every prompt (`hooks.prompt.search_query` redacts always in a process that
    has it loaded), so a prompt through the daemon pays no import and no compile for it."""
    from bli_memory.redact import redact

    redact("warm: password=Warm1234 ghp_" + "0" * 36)
    redact("warm")


def main(argv: list[str]) -> int:
    """Serve until idle, stood down or signalled. 0 also when another daemon already serves."""
    if argv and argv[0] in ("--help", "-h", "help"):
        sys.stdout.write(USAGE + "\n")
        return 0
    if argv and argv[0] == "stop":
        if argv[1:] in (["--help"], ["-h"]):
            sys.stdout.write(USAGE + "\n")
            return 0
        return stop_main(argv[1:])
    if argv:
        sys.stderr.write(f"bli-memory-mcp daemon: unexpected argument {argv[0]!r}\n{USAGE}\n")
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
    warm_redactor()
    _say(f"listening (pid {os.getpid()}, version {__version__}, idle exit after {server.idle_s:g} s)")
    reason = server.serve_forever()
    _say(f"exiting: {reason} after {server.requests} requests")
    if reason == WEDGED:
        os._exit(0)  # its stuck workers cannot be joined; the socket and lock are already released
    return 0
