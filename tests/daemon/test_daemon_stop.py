"""`bli-memory-mcp daemon stop`, run as a person runs it, against real daemons on a temporary HOME.

The one stand-in is a process that holds the daemon's lock and ignores SIGTERM (a daemon that will
not stop is a peer we cannot otherwise make on demand).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from bli_memory import __version__, daemon, daemon_wire, paths
from tests.daemon.helpers import Daemon, StandIn, daemon_env, prompt_payload, start, wait_for_ping
from tests.hooks.helpers import BIN, run_hook


def stop_command(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run([BIN, "daemon", "stop", *args], capture_output=True, text=True, env=env, timeout=30)


def socket_file(home: Path) -> Path:
    return Path(daemon_wire.socket_path({"HOME": str(home)}))


def test_stop_stops_this_users_daemon_and_says_which(home: Path, daemons: list[Daemon]) -> None:
    one = start(daemons, home)
    done = stop_command(home)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout == f"bli-memory-mcp daemon: stopped the daemon (pid {one.pid}, version {__version__})\n"
    )
    assert one.wait_exit() == 0 and "SIGTERM" in one.stderr()  # a clean exit, not a kill
    assert not socket_file(home).exists()
    again = stop_command(home)
    assert (again.returncode, again.stdout) == (0, "bli-memory-mcp daemon: no daemon runs\n")


def test_after_stop_the_next_prompt_starts_the_daemon_again(paired: Path, tag: str) -> None:
    """A person's `daemon stop` is no crash: the next prompt hook (direct, this once) starts a new
    daemon at once instead of waiting out the hourly limit on spawns, and the one after uses it."""
    env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    first = run_hook("prompt", prompt_payload(paired), paired, env=env)
    assert first.receipt()[2]["via"] == "direct", first.stderr
    started = int(str(wait_for_ping(paired)["pid"]))
    done = stop_command(paired)
    assert done.returncode == 0 and f"stopped the daemon (pid {started}" in done.stdout, done.stderr
    after = run_hook("prompt", prompt_payload(paired), paired, env=env)
    _, status, fields = after.receipt()
    assert status == "ok" and fields["via"] == "direct" and fields["daemon"] == "daemon_unavailable", (
        after.stderr
    )
    again = int(str(wait_for_ping(paired, timeout_s=10)["pid"]))
    assert again != started
    served = run_hook("prompt", prompt_payload(paired), paired, env=env)
    assert served.receipt()[2]["via"] == "daemon" and served.stdout == after.stdout


def test_stop_wakes_a_stopped_daemon_so_it_exits_cleanly(home: Path, daemons: list[Daemon]) -> None:
    one = start(daemons, home)
    os.kill(one.pid, signal.SIGSTOP)
    done = stop_command(home)
    assert done.returncode == 0 and "stopped the daemon" in done.stdout, done.stderr
    assert one.wait_exit() == 0
    assert not socket_file(home).exists()


def test_stop_removes_the_socket_a_crashed_daemon_left(home: Path, daemons: list[Daemon]) -> None:
    one = start(daemons, home)
    one.process.kill()
    one.wait_exit()
    assert socket_file(home).exists()
    done = stop_command(home)
    assert done.returncode == 0
    assert done.stdout.startswith("bli-memory-mcp daemon: no daemon runs (removed the socket")
    assert not socket_file(home).exists()


STUBBORN = """
import fcntl, os, signal, socket, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
lock_path, socket_path = sys.argv[1], sys.argv[2]
fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, f"{os.getpid()}\\n".encode())
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(socket_path)
listener.listen(4)
print("ready", flush=True)
time.sleep(60)
"""


def test_stop_kills_a_daemon_that_ignores_sigterm(home: Path) -> None:
    folder = Path(paths.state_dir({"HOME": str(home)}))
    folder.mkdir(parents=True, mode=0o700)
    stubborn = subprocess.Popen(
        [sys.executable, "-c", STUBBORN, str(folder / daemon_wire.LOCK_NAME), str(socket_file(home))],
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(home)},
    )
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
        started = time.monotonic()
        done = stop_command(home)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"bli-memory-mcp daemon: killed the daemon (pid {stubborn.pid})")
        assert stubborn.wait(5) == -signal.SIGKILL
        assert time.monotonic() - started < daemon.STOP_WAIT_S + 3.0
        assert not socket_file(home).exists()
    finally:
        stubborn.kill()
        stubborn.wait(5)
        if stubborn.stdout is not None:
            stubborn.stdout.close()


def test_stop_leaves_a_listener_that_is_not_provably_the_daemon(home: Path) -> None:
    stand_in = StandIn(home, "hang")  # listens, holds no lock
    try:
        done = stop_command(home)
    finally:
        stand_in.close()
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("bli-memory-mcp daemon: a process listens on ")
    assert "not stopping it" in done.stderr and "Traceback" not in done.stderr


def test_stop_with_an_unknown_argument_says_so_in_one_line_and_exits_2(home: Path) -> None:
    done = stop_command(home, "--force")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "bli-memory-mcp daemon stop: unexpected argument '--force'"
    assert "Traceback" not in done.stderr


def test_the_help_tells_how_to_stop_the_daemon(home: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    top = subprocess.run([BIN, "--help"], capture_output=True, text=True, env=env, timeout=30)
    assert top.returncode == 0 and "`daemon stop` stops it" in top.stdout
    own = subprocess.run([BIN, "daemon", "--help"], capture_output=True, text=True, env=env, timeout=30)
    assert own.returncode == 0
    assert "bli-memory-mcp daemon stop" in own.stdout and "exit status of `stop`" in own.stdout
    assert not socket_file(home).exists()  # asking for help starts nothing


def test_stop_never_signals_a_pid_that_does_not_hold_the_lock(home: Path) -> None:
    """A lock file naming a live process that does not hold it (a recycled pid) is left alone."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        folder = Path(paths.state_dir({"HOME": str(home)}))
        folder.mkdir(parents=True, mode=0o700)
        (folder / daemon_wire.LOCK_NAME).write_text(f"{sleeper.pid}\n")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as crashed:
            crashed.bind(str(socket_file(home)))
        done = stop_command(home)
        assert done.returncode == 0 and "no daemon runs" in done.stdout
        time.sleep(0.2)
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait(5)


def test_the_daemon_a_hook_starts_imports_nothing_from_the_project_folder(
    paired: Path, tag: str, tmp_path: Path
) -> None:
    """The hook that starts the daemon runs in the person's project; a module there named like one of
    the standard library's (`selectors.py`, `queue.py`, …) is the project's code and must never run
    inside the daemon, which then serves every project."""
    project = tmp_path / "project"
    project.mkdir()
    marker = tmp_path / "imported"
    for name in ("selectors", "queue", "json", "fcntl", "sqlite3", "hashlib", "secrets", "select"):
        (project / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name}\\n')\n")
    env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    first = run_hook("prompt", prompt_payload(project), paired, env=env, cwd=project)
    assert first.receipt()[1] == "ok", first.stderr
    wait_for_ping(paired)
    served = run_hook("prompt", prompt_payload(project), paired, env=env, cwd=project)
    assert served.receipt()[2]["via"] == "daemon", served.stderr
    assert not marker.exists(), marker.read_text()
