"""Helpers shared by the daemon tests: a real `bli-memory-mcp daemon` subprocess on a temporary HOME, a
stand-in socket that misbehaves on demand, and raw exchanges on the daemon's socket."""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from bli_memory import daemon, daemon_wire
from tests.hooks.helpers import BIN, PROMPT, hook_env

#: the HOME of whoever runs the tests (as set, and as the password database has it): where a real
#: daemon may be serving, read before any test can change the environment
REAL_HOMES = frozenset(
    os.path.realpath(home) for home in (os.path.expanduser("~"), pwd.getpwuid(os.getuid()).pw_dir)
)
START_TIMEOUT_S = 15.0
EXIT_TIMEOUT_S = 10.0
QUESTION = "how does stop_hook save the turn?"


class Daemon:
    """One `bli-memory-mcp daemon` subprocess; stderr goes to a file so it can never block."""

    def __init__(self, home: Path, idle_s: float | None = None, wait: bool = True) -> None:
        self.home = home
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8"}
        if idle_s is not None:
            env[daemon.ENV_IDLE_S] = str(idle_s)
        self.log = home / f"daemon-{time.monotonic_ns()}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([BIN, "daemon"], stdin=subprocess.DEVNULL, stderr=log, env=env)
        if wait:
            self.wait_ready()

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        return self.log.read_text()

    def wait_ready(self) -> dict[str, object]:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            got = daemon_wire.ping(time.monotonic() + 1.0, {"HOME": str(self.home)})
            if isinstance(got, dict) and got.get("pid") == self.pid:
                return got
            assert self.process.poll() is None, self.stderr()
            time.sleep(0.02)
        raise AssertionError("the daemon did not answer a ping:\n" + self.stderr())

    def wait_exit(self, timeout_s: float = EXIT_TIMEOUT_S) -> int:
        return self.process.wait(timeout_s)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)
            self.process.kill()
        self.process.wait(10)


class RealHomeReached(AssertionError):
    """A test reached (or would start a process that reaches) the real HOME's daemon."""


def is_real_home(home: str | None) -> bool:
    """The person's HOME, or the HOME this test process runs with (the suite's guard home when the
    top-level conftest set one: a process inheriting it would share one daemon with every other test).

    The process's HOME is read at the call: when pytest is pointed at this folder, this module is
    imported with the conftests, before the top-level guard replaces HOME."""
    if home is None:
        return True
    real = os.path.realpath(home)
    return real in REAL_HOMES or real == os.path.realpath(os.environ.get("HOME", "~"))


def runs_bli_memory(args: object) -> bool:
    words = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)  # type: ignore[call-overload]
    return any("bli-memory-mcp" in str(word) or "bli_memory" in str(word) for word in words)


def start(daemons: list[Daemon], home: Path, idle_s: float | None = None) -> Daemon:
    one = Daemon(home, idle_s)
    daemons.append(one)
    return one


def daemon_env(home: Path, **extra: str) -> dict[str, str]:
    return hook_env(home, BLI_MEMORY_DAEMON="1", **extra)


def prompt_payload(cwd: Path) -> dict[str, object]:
    return {**PROMPT, "prompt": QUESTION, "cwd": str(cwd)}


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def raw_exchange(home: Path, line: bytes, timeout_s: float = 5.0) -> bytes:
    """Send bytes on the daemon's socket, read until it closes."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(daemon_wire.socket_path({"HOME": str(home)}))
        sock.sendall(line)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def wait_for_ping(home: Path, timeout_s: float = 30.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pong = daemon_wire.ping(time.monotonic() + 1.0, {"HOME": str(home)})
        if isinstance(pong, dict):
            return pong
        time.sleep(0.05)
    raise AssertionError("no daemon answered")


class StandIn:
    """A socket at the daemon's path that accepts, reads a line, then does `behaviour`."""

    def __init__(self, home: Path, behaviour: str) -> None:
        path = daemon_wire.socket_path({"HOME": str(home)})
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(4)
        self.behaviour = behaviour
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                self.held.append(client)
                client.recv(65536)
                if self.behaviour == "garbage":
                    client.sendall(b"<html>nope</html>\n")
                elif self.behaviour == "hangup":
                    client.close()
                elif self.behaviour == "wrong-shape":
                    client.sendall(b'{"stdout": 3, "outcome": {"status": "ok"}}\n')
                elif self.behaviour == "newer":
                    client.sendall(b'{"error": "version_mismatch", "version": "999.0.0"}\n')

    def close(self) -> None:
        self.listener.close()
        for sock in self.held:
            sock.close()
