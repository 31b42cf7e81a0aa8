"""The daemon under hostile or broken clients, wedged, stopped by hand, and never started for nothing.

Real `bli-memory-mcp daemon` processes on a temporary HOME (the fixtures of tests/daemon/conftest.py,
including its guard that fails a test reaching the real HOME's daemon), real clients on its socket,
real hook subprocesses. Every client, wait and trickle here is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from bli_memory import __version__, daemon, daemon_wire, paths
from bli_memory.hooks import via_daemon
from bli_memory.hooks.answer import HookAnswer
from bli_memory.settings import write_session
from tests.daemon.helpers import (
    QUESTION,
    Daemon,
    daemon_env,
    prompt_payload,
    raw_exchange,
    start,
    thread_count,
    wait_for_ping,
)
from tests.hooks.helpers import run_hook

#: a request line nested far deeper than any JSON parser's recursion limit (about 1000)
DEEP_LINES = [b"[" * 200_000 + b"\n", b'{"a":' * 100_000 + b"\n"]
#: a prompt answered by a warm daemon on loopback takes a few milliseconds; this is slack for a busy CI
PROMPT_FAST_S = 0.5
START_WAIT_S = 30.0


def ask_prompt(home: Path, tag: str) -> HookAnswer | str:
    env = {"HOME": str(home), "BLI_MEMORY_CONTAINER_TAG": tag}
    return via_daemon.ask_daemon("prompt", {"prompt": QUESTION}, "/", deadline=time.monotonic() + 2, env=env)


def answered_fast(home: Path, tag: str) -> float:
    """Seconds a normal prompt took through the daemon; fails unless the daemon itself answered."""
    started = time.monotonic()
    got = ask_prompt(home, tag)
    elapsed_s = time.monotonic() - started
    assert isinstance(got, HookAnswer), got
    assert got.outcome["status"] == "ok" and "librarian" in got.stdout, got
    return elapsed_s


# -- item: a request must never cost a worker -------------------------------------------------------


def test_deeply_nested_lines_are_refused_and_every_worker_lives_on(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    one = start(daemons, paired)
    threads_before = thread_count(one.pid)
    replies: list[bytes] = []

    def send(line: bytes) -> None:
        replies.append(raw_exchange(paired, line, timeout_s=10))

    clients = [
        threading.Thread(target=send, args=(DEEP_LINES[index % 2],))
        for index in range(2 * daemon.WORKER_COUNT)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join(30)
    assert [json.loads(reply) for reply in replies] == [{"error": "bad_request"}] * len(clients)
    for _ in range(2 * daemon.WORKER_COUNT):  # every worker, not just one that happened to survive
        assert answered_fast(paired, tag) < PROMPT_FAST_S
    assert thread_count(one.pid) == threads_before
    assert "ended unexpectedly" not in one.stderr()  # none died and had to be restarted


# -- item: one deadline for the whole request line ----------------------------------------------------


def trickle(path: str, interval_s: float, limit_s: float, cut_after: list[float]) -> None:
    """Connect and send one byte every `interval_s` (a line that never ends); record when the daemon
    cut it off, or give up after `limit_s` (then nothing is recorded)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        started = time.monotonic()
        sock.sendall(b'{"event":"prompt",')
        while time.monotonic() - started < limit_s:
            sock.settimeout(interval_s)
            try:
                if sock.recv(100) == b"":
                    break  # closed by the daemon
            except TimeoutError:
                pass
            except OSError:
                break
            try:
                sock.sendall(b" ")
            except OSError:
                break
        else:
            return
        cut_after.append(time.monotonic() - started)


def test_trickling_clients_are_cut_at_the_request_deadline_and_hold_no_worker(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    start(daemons, paired)
    path = daemon_wire.socket_path({"HOME": str(paired)})
    count = 2 * daemon.WORKER_COUNT
    limit_s = daemon.REQUEST_READ_S + 3.0
    cut_after: list[float] = []
    clients = [threading.Thread(target=trickle, args=(path, 0.5, limit_s, cut_after)) for _ in range(count)]
    for client in clients:
        client.start()
    try:
        time.sleep(0.3)  # every trickler is connected and has sent part of its line
        for _ in range(3):  # served at once while every trickler is still mid-line
            assert answered_fast(paired, tag) < PROMPT_FAST_S
    finally:
        for client in clients:
            client.join(limit_s + 5)
    assert len(cut_after) == count, cut_after  # none could keep its connection until it gave up
    assert max(cut_after) < daemon.REQUEST_READ_S + 1.0, cut_after


# -- item: a wedged daemon is replaced at once ---------------------------------------------------------


def test_a_stopped_daemon_is_replaced_at_once_even_after_an_earlier_replacement(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    """The replacement stamp of one a minute ago does not leave this one wedged for the hour."""
    one = start(daemons, paired)
    stamp = Path(paths.state_dir({"HOME": str(paired)})) / via_daemon.REPLACE_STAMP_NAME
    stamp.write_text("replaced\n")
    minute_ago = time.time() - 60
    os.utime(stamp, (minute_ago, minute_ago))
    os.kill(one.pid, signal.SIGSTOP)  # accepts in the kernel's backlog, answers nothing
    env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    run = run_hook("prompt", prompt_payload(paired), paired, env=env)
    _, status, fields = run.receipt()
    assert status == "ok" and fields["via"] == "direct" and fields["daemon"] == "daemon_timeout", run.stderr
    assert one.wait_exit() == -signal.SIGKILL
    pong = wait_for_ping(paired)
    replacement = int(str(pong["pid"]))
    try:
        assert replacement != one.pid
        again = run_hook("prompt", prompt_payload(paired), paired, env=env)
        assert again.receipt()[2]["via"] == "daemon" and again.stdout == run.stdout
    finally:
        os.kill(replacement, signal.SIGTERM)


def test_a_busy_daemon_answers_the_wedge_ping_and_is_not_killed(
    paired: Path, daemons: list[Daemon], tag: str, tmp_path: Path
) -> None:
    """Every worker busy (stuck in a FIFO, within its grace): the accept loop still answers a ping, so
    the hook's replace_wedged proves it alive and leaves it."""
    one = start(daemons, paired)
    fifo_repo = fifo_repository(tmp_path)
    env = {"HOME": str(paired)}
    request = {
        "event": "prompt",
        "payload": {"prompt": QUESTION},
        "cwd": str(fifo_repo),
        "version": __version__,
        "budgetMs": 3000,
    }
    line = json.dumps(request).encode()
    busy = [threading.Thread(target=raw_quiet, args=(paired, line)) for _ in range(daemon.WORKER_COUNT)]
    for client in busy:
        client.start()
    try:
        time.sleep(0.3)
        assert ask_prompt(paired, tag) == daemon_wire.TIMEOUT  # no worker free
        assert via_daemon.replace_wedged(env) is None
        assert one.process.poll() is None
        assert not (Path(paths.state_dir(env)) / via_daemon.REPLACE_STAMP_NAME).exists()
    finally:
        unblock_fifo(fifo_repo)
        for client in busy:
            client.join(20)
    assert answered_fast(paired, tag) < PROMPT_FAST_S  # its workers were busy, never gone


def raw_quiet(home: Path, line: bytes) -> None:
    with contextlib.suppress(OSError):
        raw_exchange(home, line + b"\n", timeout_s=15)


def fifo_repository(base: Path) -> Path:
    """A folder whose `.git/commondir` is a FIFO: reading it (to find the space) blocks until a writer
    comes, the way a network filesystem that stops answering would."""
    repo = base / "fifo-repo"
    for folder in ("objects", "refs"):
        (repo / ".git" / folder).mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.mkfifo(repo / ".git" / "commondir")
    return repo


def unblock_fifo(repo: Path) -> None:
    """Let every reader blocked on the FIFO go (a writer opened and closed gives them EOF), and put
    an empty file in its place so the next read does not block again."""
    fifo = repo / ".git" / "commondir"
    writer = None
    with contextlib.suppress(OSError):
        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO when nobody is blocked on it
    os.unlink(fifo)
    fifo.write_text("")
    if writer is not None:
        os.close(writer)


def test_a_daemon_whose_workers_are_all_stuck_stands_down_and_the_next_hook_starts_a_new_one(
    home: Path, daemons: list[Daemon], tmp_path: Path
) -> None:
    # paired with a door that is never reached: the workers block before any door call
    write_session("http://127.0.0.1:9", "bli_test_token_not_real", env={"HOME": str(home)})
    one = start(daemons, home)
    spawn_stamp = Path(paths.state_dir({"HOME": str(home)})) / daemon_wire.STAMP_NAME
    spawn_stamp.write_text(__version__ + "\n")  # started just now: only its removal lets a hook start one
    fifo_repo = fifo_repository(tmp_path)
    budget_ms = 200
    request = {
        "event": "prompt",
        "payload": {"prompt": QUESTION},
        "cwd": str(fifo_repo),
        "version": __version__,
        "budgetMs": budget_ms,
    }
    line = json.dumps(request).encode()
    started = time.monotonic()
    stuck = [threading.Thread(target=raw_quiet, args=(home, line)) for _ in range(daemon.WORKER_COUNT)]
    for client in stuck:
        client.start()
    try:
        assert one.wait_exit(budget_ms / 1000 + daemon.STUCK_GRACE_S + 5.0) == 0
        assert (
            time.monotonic() - started
            < budget_ms / 1000 + daemon.STUCK_GRACE_S + 2 * daemon.HEALTH_CHECK_S + 1.5
        )
    finally:
        unblock_fifo(fifo_repo)
        for client in stuck:
            client.join(20)
    assert "wedged" in one.stderr(), one.stderr()
    assert not os.path.exists(daemon_wire.socket_path({"HOME": str(home)}))
    assert not spawn_stamp.exists()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    via_daemon.after_miss(daemon_wire.UNAVAILABLE, env)  # what the next hook does on finding none
    pong = wait_for_ping(home, timeout_s=START_WAIT_S)
    os.kill(int(str(pong["pid"])), signal.SIGTERM)
    assert pong["pid"] != one.pid


# -- item: nothing to serve, nothing started ----------------------------------------------------------


def processes_with_home(home: Path) -> list[int]:
    """Pids of this user's processes whose environment has HOME=home (a daemon a hook started there)."""
    wanted = b"HOME=" + str(home).encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if wanted in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                found.append(int(name))
    return found


@pytest.mark.parametrize(
    ("event", "payload"), [("prompt", {"prompt": QUESTION}), ("session-start", {"source": "startup"})]
)
def test_an_unpaired_machine_starts_no_daemon(home: Path, event: str, payload: dict[str, object]) -> None:
    env = daemon_env(home)
    run = run_hook(event, {**payload, "cwd": str(home)}, home, env=env)
    _, status, fields = run.receipt()
    assert (status, fields["reason"]) == ("skipped", "unpaired"), run.stderr
    folder = Path(paths.state_dir({"HOME": str(home)}))
    give_up = time.monotonic() + 1.5  # a daemon a hook started would be listening well within this
    try:
        while time.monotonic() < give_up:
            assert not (folder / daemon_wire.SOCKET_NAME).exists()
            assert processes_with_home(home) == []
            time.sleep(0.1)
        assert not (folder / daemon_wire.STAMP_NAME).exists()  # not even tried
    finally:
        for pid in processes_with_home(home):
            os.kill(pid, signal.SIGTERM)


def test_has_session_agrees_with_the_settings_module(home: Path) -> None:
    from bli_memory.settings import remove_session, session_file

    env = {"HOME": str(home)}
    assert not via_daemon.has_session(env)
    write_session("http://127.0.0.1:9", "bli_test_token_not_real", env=env)
    assert session_file(env) == os.path.join(paths.config_dir(env), via_daemon.SESSION_FILE_NAME)
    assert via_daemon.has_session(env)
    remove_session(env)
    assert not via_daemon.has_session(env)


def main_thread_wakeups(pid: int) -> int:
    status = Path(f"/proc/{pid}/task/{pid}/status").read_text()
    return int(status.split("voluntary_ctxt_switches:")[1].split()[0])


def test_an_idle_daemon_sleeps_without_waking_for_its_health_checks(
    home: Path, daemons: list[Daemon]
) -> None:
    one = start(daemons, home)
    time.sleep(2 * daemon.HEALTH_CHECK_S + 0.2)  # the checks the ready-ping scheduled have run and stopped
    before = main_thread_wakeups(one.pid)
    time.sleep(6 * daemon.HEALTH_CHECK_S)
    assert main_thread_wakeups(one.pid) - before <= 1


def test_a_worker_that_ended_is_restarted_by_the_health_check(home: Path) -> None:
    """Nothing a client sends ends a worker any more; should anything else, the loop starts another."""
    server = daemon.Server({"HOME": str(home)})
    server.workers = [server._start_worker(0)]
    try:
        _, first = server.workers[0]
        server.pending.put(None)  # the one way a worker ends: told to
        first.join(5)
        assert not first.is_alive()
        server.check_workers(time.monotonic())
        _, second = server.workers[0]
        assert second is not first and second.is_alive()
        assert server.stop_reason is None  # a restarted worker is not a wedged daemon
    finally:
        for _ in server.workers:
            server.pending.put(None)
        for _, thread in server.workers:
            thread.join(5)
        server._wake_r.close()
        server._wake_w.close()


def test_a_fifo_named_as_the_global_git_config_blocks_no_worker(
    paired: Path, daemons: list[Daemon], tmp_path: Path
) -> None:
    """A hook's GIT_CONFIG_GLOBAL that names a FIFO (or any file that is not a regular one) is refused
    at once, the way an unreadable config is; no worker waits for a writer that never comes."""
    start(daemons, paired)
    repo = tmp_path / "repo"
    for folder in ("objects", "refs"):
        (repo / ".git" / folder).mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    fifo = tmp_path / "gitconfig-fifo"
    os.mkfifo(fifo)
    env = {"HOME": str(paired), "GIT_CONFIG_GLOBAL": str(fifo), "GIT_CONFIG_NOSYSTEM": "1"}
    answers: list[object] = []

    def ask() -> None:
        deadline = time.monotonic() + 2
        answers.append(
            via_daemon.ask_daemon("prompt", {"prompt": QUESTION}, str(repo), deadline=deadline, env=env)
        )

    clients = [threading.Thread(target=ask) for _ in range(daemon.WORKER_COUNT + 1)]
    try:
        for client in clients:
            client.start()
        for client in clients:
            client.join(10)
    finally:
        with contextlib.suppress(OSError):  # let a reader blocked on the FIFO go, should there be one
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert len(answers) == daemon.WORKER_COUNT + 1
    assert all(isinstance(answer, HookAnswer) for answer in answers), answers
