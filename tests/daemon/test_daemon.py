"""The resident daemon as it runs for real: `bli-memory-mcp daemon` processes on a temporary HOME, against
the real door, asked by real hook subprocesses and by the hook-side client (`hooks.via_daemon`).

Stand-ins appear only where a peer must misbehave: a socket that accepts and never answers, one that
answers garbage, and a recording relay that captures every byte crossing the socket.

HOME is a short folder under /tmp (not pytest's tmp_path): a unix socket path must fit in ~104 bytes.
No test may reach the daemon of the HOME running the tests (`never_the_real_home` in
tests/daemon/conftest.py, autouse): a person who runs the suite after following the README has a real
daemon there.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bli_memory import __version__, daemon, daemon_wire, paths
from bli_memory.hooks import via_daemon
from bli_memory.hooks.answer import HookAnswer
from bli_memory.settings import write_session
from tests.daemon.helpers import (
    QUESTION,
    REAL_HOMES,
    START_TIMEOUT_S,
    Daemon,
    RealHomeReached,
    StandIn,
    daemon_env,
    prompt_payload,
    raw_exchange,
    start,
    thread_count,
    wait_for_ping,
)
from tests.hooks.helpers import (
    BIN,
    MARGIN_S,
    PROMPT,
    SESSION_START,
    Run,
    counted_run,
    hook_env,
    imports_without_site,
    run_hook,
)


def test_the_guard_stops_a_test_that_would_reach_the_real_homes_daemon() -> None:
    with pytest.raises(RealHomeReached):
        via_daemon.ask_daemon("prompt", PROMPT, "/", deadline=time.monotonic() + 1)  # no env: os.environ
    with pytest.raises(RealHomeReached):
        daemon_wire.ping(time.monotonic() + 1, {"HOME": next(iter(REAL_HOMES))})
    with pytest.raises(RealHomeReached):
        subprocess.run([BIN, "daemon", "stop"], capture_output=True, timeout=30)  # inherits HOME


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def children(pid: int) -> list[str]:
    found: list[str] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        found += Path(f"/proc/{pid}/task/{task}/children").read_text().split()
    return found


# -- answers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "payload"), [("prompt", {**PROMPT, "prompt": QUESTION}), ("session-start", SESSION_START)]
)
def test_the_hook_answered_via_the_daemon_prints_what_the_direct_path_prints(
    paired: Path, daemons: list[Daemon], tag: str, event: str, payload: dict[str, object]
) -> None:
    start(daemons, paired)
    direct = run_hook(event, payload, paired, env=hook_env(paired, BLI_MEMORY_CONTAINER_TAG=tag))
    via = run_hook(event, payload, paired, env=daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag))
    assert direct.receipt()[1:] == ("ok", direct.receipt()[2]) and direct.receipt()[2]["via"] == "direct"
    _, status, fields = via.receipt()
    assert status == "ok" and fields["via"] == "daemon", via.stderr
    assert via.stdout == direct.stdout and "librarian" in via.stdout and tag in via.stdout
    assert via.returncode == 0


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, timeout=30)


def test_the_hook_path_through_the_daemon_needs_no_json_re_enum_socket_or_signal(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    """Through the daemon a hook's work is one socket exchange, so its cold start is most of its cost:
    `json` (with `re`), `socket` and `signal` (each with `enum`) were more than that exchange."""
    start(daemons, paired)
    env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    modules, stderr, stdout = imports_without_site("prompt", prompt_payload(paired), env)
    assert '"via":"daemon"' in stderr and "prompt ok" in stderr, stderr
    assert "librarian" in stdout
    assert not {"json", "re", "enum", "socket", "signal", "typing", "bli_memory.door_client"} & modules


def test_a_run_through_the_daemon_decides_triviality_once_and_finishes_once(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    """The daemon's answer is finished once, by the hook (route, whole duration, probe flag)."""
    start(daemons, paired)
    env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    calls, receipt = counted_run("prompt", prompt_payload(paired), paired, env)
    assert receipt.startswith('[bli-memory] prompt ok {"hits":1,') and receipt.endswith('"via":"daemon"}')
    assert calls == {"skip_reason": 1, "finish": 1}


def test_the_daemon_finds_the_same_space_as_the_hook_and_notices_when_it_changes(
    paired: Path, daemons: list[Daemon], door: Any, tmp_path: Path
) -> None:
    """No override: the daemon computes the folder's space (cached), and a new origin is a new space."""
    start(daemons, paired)
    repo = tmp_path / "project"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", f"https://example.invalid/{tmp_path.name}/one.git")
    # each memory answers the hook's question, so the door's relevance floor keeps it
    one = recall_both_ways(
        paired, door, repo / "src", "stop_hook saves the turn by posting it to the first origin's door."
    )
    git(repo, "remote", "set-url", "origin", f"https://example.invalid/{tmp_path.name}/two.git")
    two = recall_both_ways(
        paired, door, repo / "src", "stop_hook saves the turn by posting it to the second origin's door."
    )
    assert one != two


def recall_both_ways(home: Path, door: Any, cwd: Path, memory: str) -> str:
    """Save `memory` in cwd's space (as `space` computes it); both routes must recall exactly it."""
    from bli_memory.space import container_tag

    tag = container_tag(str(cwd), env={"HOME": str(home)})
    assert door.post("/api/memory/save", {"content": memory, "containerTag": tag})[0] == 201
    direct = run_hook("prompt", prompt_payload(cwd), home, env=hook_env(home), cwd=cwd)
    via = run_hook("prompt", prompt_payload(cwd), home, env=daemon_env(home), cwd=cwd)
    assert via.receipt()[2]["via"] == "daemon", via.stderr
    assert via.stdout == direct.stdout and memory in via.stdout and tag in via.stdout
    return tag


# -- the socket --------------------------------------------------------------------------------------


def test_the_socket_is_0600_in_a_folder_only_the_user_can_enter(home: Path, daemons: list[Daemon]) -> None:
    folder = home / ".local" / "state" / "bli-cockpit"
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)  # an over-open folder left by something else is made private
    start(daemons, home)
    sock = Path(daemon_wire.socket_path({"HOME": str(home)}))
    assert stat.S_ISSOCK(sock.lstat().st_mode)
    assert stat.S_IMODE(sock.lstat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert folder.stat().st_uid == os.getuid()


class Relay:
    """A recording man-in-the-middle: listens on the daemon's path, forwards to where it was moved."""

    def __init__(self, path: str, target: str) -> None:
        self.captured = bytearray()
        self.connections = 0
        self._lock = threading.Lock()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        self.target = target
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.target)
            except OSError:  # the daemon behind it is gone (a late ping at teardown)
                upstream.close()
                client.close()
                continue
            self.connections += 1
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                with self._lock:
                    self.captured += chunk
                sink.sendall(chunk)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


def test_the_token_never_crosses_the_socket(paired: Path, daemons: list[Daemon], door: Any, tag: str) -> None:
    start(daemons, paired)
    path = daemon_wire.socket_path({"HOME": str(paired)})
    moved = path + ".real"
    os.rename(path, moved)
    relay = Relay(path, moved)
    try:
        env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
        runs = [run_hook("prompt", {**PROMPT, "prompt": QUESTION}, paired, env=env)]
        runs.append(run_hook("session-start", SESSION_START, paired, env=env))
        assert daemon_wire.ping(time.monotonic() + 2, {"HOME": str(paired)}) != "daemon_unavailable"
    finally:
        relay.close()
    assert [run.receipt()[2]["via"] for run in runs] == ["daemon", "daemon"]
    assert "librarian" in runs[0].stdout
    captured = bytes(relay.captured)
    assert relay.connections == 3 and b'"version"' in captured and b"librarian" in captured
    token = door.token.encode()
    assert token not in captured
    assert token[4:20] not in captured  # not even a slice of its secret part
    assert b"Bearer" not in captured and b"device_token" not in captured


# -- lifecycle ---------------------------------------------------------------------------------------


def test_a_second_instance_exits_0_saying_daemon_already_running(home: Path, daemons: list[Daemon]) -> None:
    first = start(daemons, home)
    second = Daemon(home, wait=False)
    daemons.append(second)
    assert second.wait_exit() == 0
    assert "daemon_already_running" in second.stderr()
    assert first.wait_ready()["pid"] == first.pid


def test_idle_exit_removes_the_socket(home: Path, daemons: list[Daemon]) -> None:
    one = start(daemons, home, idle_s=1.0)
    assert daemon_wire.ping(time.monotonic() + 1, {"HOME": str(home)}) != "daemon_unavailable"
    started = time.monotonic()
    assert one.wait_exit() == 0
    assert time.monotonic() - started < 5.0
    assert "idle" in one.stderr()
    assert not os.path.exists(daemon_wire.socket_path({"HOME": str(home)}))


def test_sigterm_exits_cleanly_and_removes_the_socket(home: Path, daemons: list[Daemon]) -> None:
    one = start(daemons, home)
    one.process.send_signal(signal.SIGTERM)
    assert one.wait_exit() == 0
    assert "SIGTERM" in one.stderr() and "Traceback" not in one.stderr()
    assert not os.path.exists(daemon_wire.socket_path({"HOME": str(home)}))


def test_an_older_caller_is_refused_and_a_newer_one_retires_the_daemon(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    one = start(daemons, paired)
    stamp = Path(paths.state_dir({"HOME": str(paired)})) / daemon_wire.STAMP_NAME
    stamp.write_text(__version__ + "\n")  # this version was started less than an hour ago
    older = {"event": "prompt", "payload": PROMPT, "cwd": str(paired), "version": "0.0.0-older"}
    reply = raw_exchange(paired, json.dumps(older).encode() + b"\n")
    assert json.loads(reply) == {"error": "version_mismatch", "version": __version__}
    assert one.wait_ready()["pid"] == one.pid  # an older caller goes direct; the daemon keeps serving
    newer = {**older, "version": "999.0.0"}
    reply = raw_exchange(paired, json.dumps(newer).encode() + b"\n")
    assert json.loads(reply) == {"error": "version_mismatch", "version": __version__}
    assert one.wait_exit() == 0
    assert not os.path.exists(daemon_wire.socket_path({"HOME": str(paired)}))
    assert not stamp.exists()  # so the stamp cannot keep the next hook from starting one
    run = run_hook(
        "prompt", prompt_payload(paired), paired, env=daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    )
    assert run.receipt()[2]["daemon"] == "daemon_unavailable"
    pong = wait_for_ping(paired)
    os.kill(int(str(pong["pid"])), signal.SIGTERM)
    assert pong["version"] == __version__


def test_versions_have_one_total_order() -> None:
    ordered = [
        "0.0.0-older",
        "0.1",
        "0.1.0rc1",
        "0.1.0",
        "0.1.1",
        "0.2.0.dev1",
        "0.10.0",
        "999.0.0",
    ]
    assert sorted(reversed(ordered), key=daemon_wire.version_key) == ordered
    for a in ordered:
        for b in ordered:
            assert daemon_wire.is_newer(a, b) + daemon_wire.is_newer(b, a) == (a != b)


def test_a_wedged_daemon_costs_one_slice_and_is_replaced_but_not_twice_within_the_interval(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    one = start(daemons, paired)
    os.kill(one.pid, signal.SIGSTOP)  # accepts in the kernel's backlog, never answers
    env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    run = run_hook("prompt", prompt_payload(paired), paired, env=env)
    _, status, fields = run.receipt()
    assert status == "ok" and fields["via"] == "direct" and fields["daemon"] == "daemon_timeout", run.stderr
    assert "librarian" in run.stdout
    assert int(str(fields["elapsed_ms"])) < 2000 * via_daemon.DAEMON_SHARE + 600
    assert one.wait_exit() == -signal.SIGKILL  # the hook replaced it...
    pong = wait_for_ping(paired)
    replacement = int(str(pong["pid"]))
    try:
        assert replacement != one.pid
        again = run_hook("prompt", prompt_payload(paired), paired, env=env)
        assert again.receipt()[2]["via"] == "daemon" and again.stdout == run.stdout
        os.kill(replacement, signal.SIGSTOP)  # ... but not again within REPLACE_INTERVAL_S
        third = run_hook("prompt", prompt_payload(paired), paired, env=env)
        assert third.receipt()[2]["daemon"] == "daemon_timeout" and "librarian" in third.stdout
        time.sleep(0.3)
        assert Path(f"/proc/{replacement}").exists()
    finally:
        os.kill(replacement, signal.SIGCONT)
        os.kill(replacement, signal.SIGTERM)


def test_session_start_gives_a_hanging_socket_a_slice_and_kills_nothing_it_cannot_prove_ours(
    paired: Path, tag: str
) -> None:
    """A socket that hangs but no daemon holds the lock (the lock file names this test's own pid)."""
    folder = Path(paths.state_dir({"HOME": str(paired)}))
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    (folder / daemon_wire.LOCK_NAME).write_text(f"{os.getpid()}\n")
    stand_in = StandIn(paired, "hang")
    try:
        env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
        run = run_hook("session-start", SESSION_START, paired, env=env)
    finally:
        stand_in.close()
    _, status, fields = run.receipt()
    assert status == "ok" and fields["via"] == "direct" and fields["daemon"] == "daemon_timeout", run.stderr
    assert run.elapsed_s < 8.0 * via_daemon.DAEMON_SHARE + 1.0 + MARGIN_S
    assert via_daemon.replace_wedged({"HOME": str(paired)}) is None  # and it did not kill us


def test_a_stale_socket_from_a_crashed_daemon_is_replaced(home: Path, daemons: list[Daemon]) -> None:
    path = daemon_wire.socket_path({"HOME": str(home)})
    os.makedirs(os.path.dirname(path), mode=0o700)
    crashed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    crashed.bind(path)
    crashed.close()  # the file stays; nobody listens: connect is refused
    assert (
        via_daemon.ask_daemon(
            "prompt", PROMPT, str(home), deadline=time.monotonic() + 2, env={"HOME": str(home)}
        )
        == daemon_wire.UNAVAILABLE
    )
    one = start(daemons, home)
    assert "stale socket" in one.stderr()
    assert one.wait_ready()["pid"] == one.pid


def test_a_killed_daemon_also_replaced_by_the_next_one(home: Path, daemons: list[Daemon]) -> None:
    first = start(daemons, home)
    first.process.kill()
    first.wait_exit()
    assert os.path.exists(daemon_wire.socket_path({"HOME": str(home)}))  # SIGKILL leaves it behind
    second = start(daemons, home)
    assert second.wait_ready()["pid"] == second.pid


def test_daemon_killed_mid_request_the_hook_still_answers_direct_within_its_deadline(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    one = start(daemons, paired)
    os.kill(one.pid, signal.SIGSTOP)  # it accepts in the kernel's backlog but never answers...
    result: list[Run] = []
    hook = threading.Thread(
        target=lambda: result.append(
            run_hook(
                "prompt",
                {**PROMPT, "prompt": QUESTION},
                paired,
                env=daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag),
            )
        )
    )
    hook.start()
    time.sleep(0.4)
    one.process.kill()  # ... and dies with the request in flight
    hook.join(30)
    (run,) = result
    _, status, fields = run.receipt()
    assert status == "ok" and fields["via"] == "direct", run.stderr
    assert "librarian" in run.stdout
    assert run.elapsed_s < 2.0 + MARGIN_S


def test_bli_memory_daemon_0_takes_the_direct_path(paired: Path, daemons: list[Daemon], tag: str) -> None:
    start(daemons, paired)
    run = run_hook(
        "prompt", {**PROMPT, "prompt": QUESTION}, paired, env=hook_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    )
    assert run.receipt()[2]["via"] == "direct" and "librarian" in run.stdout


# -- robustness ----------------------------------------------------------------------------------------


def test_garbage_huge_and_hanging_clients_cost_only_their_own_connection(
    home: Path, daemons: list[Daemon]
) -> None:
    one = start(daemons, home)
    hanging = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(daemon.WORKER_COUNT)]
    for sock in hanging:  # every worker stuck on a client that never sends its line
        sock.connect(daemon_wire.socket_path({"HOME": str(home)}))
        sock.sendall(b'{"event": "pi')
    try:
        started = time.monotonic()
        assert json.loads(raw_exchange(home, b'{"event":"ping"}\n'))["pid"] == one.pid
        assert time.monotonic() - started < daemon.REQUEST_READ_S + 2.0  # cut loose, not stuck
        for sock in hanging:
            sock.settimeout(5)
            assert sock.recv(100) == b""  # the daemon closed it at REQUEST_READ_S
    finally:
        for sock in hanging:
            sock.close()
    assert json.loads(raw_exchange(home, b"\x00\xffnot json\n")) == {"error": "bad_request"}
    assert json.loads(raw_exchange(home, b"[1, 2]\n")) == {"error": "bad_request"}
    no_version = {"event": "prompt", "payload": PROMPT, "cwd": "/"}
    assert json.loads(raw_exchange(home, json.dumps(no_version).encode() + b"\n")) == {"error": "bad_request"}
    bad_cwd = {"event": "prompt", "payload": PROMPT, "cwd": "relative", "version": __version__}
    assert json.loads(raw_exchange(home, json.dumps(bad_cwd).encode() + b"\n")) == {"error": "bad_request"}
    stop = {"event": "stop", "payload": {}, "cwd": "/", "version": __version__}
    assert json.loads(raw_exchange(home, json.dumps(stop).encode() + b"\n")) == {"error": "unsupported_event"}
    huge = b'{"event":"prompt","payload":{"prompt":"' + b"x" * (daemon.REQUEST_MAX_BYTES + 10) + b'"}}\n'
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        assert json.loads(raw_exchange(home, huge)) == {"error": "too_large"}
    assert one.wait_ready()["pid"] == one.pid


def test_no_descriptor_thread_or_child_leaks_over_1000_requests(
    paired: Path, daemons: list[Daemon], tag: str
) -> None:
    one = start(daemons, paired)
    env = {"HOME": str(paired), daemon_wire.SPACE_ENV_NAMES[0]: tag}
    base_fds = fd_count(one.pid)
    base_threads = thread_count(one.pid)
    kinds = ["prompt", "trivial", "session-start", "ping", "garbage", "hangup", "nocontainer"]

    def one_request(index: int) -> None:
        kind = kinds[index % len(kinds)]
        deadline = time.monotonic() + 5
        if kind == "prompt":
            got = via_daemon.ask_daemon("prompt", {"prompt": QUESTION}, "/", deadline=deadline, env=env)
            assert isinstance(got, HookAnswer) and got.outcome["status"] == "ok", got
        elif kind == "trivial":
            got = via_daemon.ask_daemon("prompt", {"prompt": "ok"}, "/", deadline=deadline, env=env)
            assert isinstance(got, HookAnswer) and got.outcome["reason"] == "trivial_prompt"
        elif kind == "session-start":
            got = via_daemon.ask_daemon("session-start", {}, "/", deadline=deadline, env=env)
            assert isinstance(got, HookAnswer) and got.outcome["status"] == "ok", got
        elif kind == "nocontainer":  # the space is computed (and cached) by the daemon
            got = via_daemon.ask_daemon(
                "prompt",
                {"prompt": QUESTION},
                str(paired),
                deadline=deadline,
                env=env | {daemon_wire.SPACE_ENV_NAMES[0]: ""},
            )
            assert isinstance(got, HookAnswer), got
        elif kind == "ping":
            assert isinstance(daemon_wire.ping(deadline, env), dict)
        elif kind == "garbage":
            assert raw_exchange(paired, b"}{\n") == b'{"error":"bad_request"}\n'
        else:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(daemon_wire.socket_path(env))
                sock.sendall(b'{"event":')  # and hang up mid-line

    errors: list[BaseException] = []

    def client(first: int) -> None:
        try:
            for index in range(first, 1000, 4):
                one_request(index)
        except BaseException as exc:
            errors.append(exc)

    clients = [threading.Thread(target=client, args=(first,)) for first in range(4)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(60)
    assert not errors, errors[:3]
    assert daemon_wire.ping(time.monotonic() + 2, env) != "daemon_unavailable"
    time.sleep(0.2)  # the last hang-ups are closed by their workers
    # at most one keep-alive door connection per worker beyond what it had before any request
    assert fd_count(one.pid) <= base_fds + daemon.WORKER_COUNT
    assert thread_count(one.pid) == base_threads
    assert children(one.pid) == []
    one.process.send_signal(signal.SIGTERM)
    assert one.wait_exit() == 0
    served = int(one.stderr().rsplit(" after ", 1)[1].split()[0])
    assert served >= 1000 + 2  # every request counted: the ping that found it ready, 1000, the last ping


# -- the hook-side client --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("hang", daemon_wire.TIMEOUT),
        ("garbage", daemon_wire.BAD_RESPONSE),
        ("hangup", daemon_wire.BAD_RESPONSE),
        ("wrong-shape", daemon_wire.BAD_RESPONSE),
        ("newer", daemon_wire.NEWER),
    ],
)
def test_ask_daemon_names_why_a_misbehaving_daemon_was_not_used(
    home: Path, behaviour: str, reason: str
) -> None:
    stand_in = StandIn(home, behaviour)
    try:
        started = time.monotonic()
        got = via_daemon.ask_daemon(
            "prompt", PROMPT, str(home), deadline=started + 0.5, env={"HOME": str(home)}
        )
        assert got == reason
        assert time.monotonic() - started < 0.5 * via_daemon.DAEMON_SHARE + 0.1  # its slice, no more
    finally:
        stand_in.close()


def test_ask_daemon_without_a_daemon_or_with_overrides(home: Path) -> None:
    env = {"HOME": str(home)}
    started = time.monotonic()
    assert (
        via_daemon.ask_daemon("prompt", PROMPT, "/", deadline=started + 2, env=env) == daemon_wire.UNAVAILABLE
    )
    assert time.monotonic() - started < daemon_wire.CONNECT_BUDGET_S + 0.1
    for name in via_daemon.DECLINE_ENV_NAMES:
        got = via_daemon.ask_daemon("prompt", PROMPT, "/", deadline=started + 2, env={**env, name: "x"})
        assert got == daemon_wire.ENV_OVERRIDE
    assert (
        via_daemon.ask_daemon("prompt", PROMPT, "/", deadline=time.monotonic(), env=env)
        == daemon_wire.TIMEOUT
    )
    huge = {"prompt": "x" * daemon_wire.REQUEST_MAX_BYTES}
    assert (
        via_daemon.ask_daemon("prompt", huge, "/", deadline=time.monotonic() + 2, env=env)
        == daemon_wire.TOO_LARGE
    )


def test_spawn_daemon_starts_it_detached_once_an_hour(home: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "BLI_MEMORY_DEVICE_TOKEN": "bli_secret_in_env",
    }
    marker = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(marker, True)  # a descriptor the host left open: the daemon must not get it
    try:
        pid = via_daemon.spawn_daemon(env)
    finally:
        os.close(marker)
    assert pid is not None
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not isinstance(got := daemon_wire.ping(time.monotonic() + 1, env), dict):
            assert time.monotonic() < deadline, got
            time.sleep(0.02)
        assert got["pid"] == pid
        assert os.getsid(pid) == pid  # its own session: no terminal, no signals meant for the host
        targets = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        assert [targets[str(fd)] for fd in (0, 1, 2)] == ["/dev/null"] * 3
        assert list(targets.values()).count("/dev/null") == 3, targets  # the marker was not inherited
        assert b"bli_secret_in_env" not in Path(f"/proc/{pid}/environ").read_bytes()
        assert via_daemon.spawn_daemon(env) is None  # throttled: once an hour per machine
        stamp = Path(paths.state_dir(env)) / daemon_wire.STAMP_NAME
        assert stamp.read_text().strip() == __version__
        stamp.write_text("0.0.0-older\n")  # an upgrade is not throttled by the old version's stamp
        again = via_daemon.spawn_daemon(env)
        assert again is not None
        assert os.waitpid(again, 0)[1] == 0  # the second one exits 0: daemon_already_running
    finally:
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_space_cache_hits_and_invalidates(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / "a" / "b").mkdir(parents=True)
    env = {"HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    cache = daemon.SpaceCache()
    outside = cache.tag(False, str(repo / "a" / "b"), env)
    assert outside.startswith("dir_b__")
    git(repo, "init", "-q")
    inside = cache.tag(False, str(repo / "a" / "b"), env)
    assert inside.startswith("repo_r__") and cache.misses == 2
    assert cache.tag(False, str(repo / "a" / "b"), env) == inside and cache.hits == 1
    git(repo, "remote", "add", "origin", "https://example.invalid/x/proj.git")
    remote = cache.tag(False, str(repo / "a" / "b"), env)
    assert remote.startswith("repo_proj__") and cache.misses == 3
    (tmp_path / ".gitconfig").write_text(
        '[url "https://mirror.invalid/"]\n\tinsteadOf = https://example.invalid/\n'
    )
    from bli_memory.space import container_tag

    assert (
        cache.tag(False, str(repo / "a" / "b"), env)
        == container_tag(str(repo / "a" / "b"), env=env)
        != remote
    )


def test_the_prompt_hook_starts_the_daemon_and_the_next_prompt_goes_through_it(
    paired: Path, tag: str
) -> None:
    env = daemon_env(paired, BLI_MEMORY_CONTAINER_TAG=tag)
    first = run_hook("prompt", {**PROMPT, "prompt": QUESTION}, paired, env=env)
    _, status, fields = first.receipt()
    assert status == "ok" and fields["via"] == "direct" and fields["daemon"] == "daemon_unavailable"
    deadline = time.monotonic() + 30
    pong: dict[str, object] | str = "daemon_unavailable"
    while time.monotonic() < deadline:
        pong = daemon_wire.ping(time.monotonic() + 1.0, {"HOME": str(paired)})
        if isinstance(pong, dict):
            break
        time.sleep(0.1)
    assert isinstance(pong, dict) and pong["version"] == __version__, pong
    try:
        second = run_hook("prompt", {**PROMPT, "prompt": QUESTION}, paired, env=env)
        _, status, fields = second.receipt()
        assert status == "ok" and fields["via"] == "daemon" and "daemon" not in fields, second.stderr
        assert second.stdout == first.stdout and tag in second.stdout
    finally:
        os.kill(int(str(pong["pid"])), signal.SIGTERM)


def test_an_unusable_door_url_is_bad_config_via_the_daemon_too(home: Path, daemons: list[Daemon]) -> None:
    write_session("ftp://door.example", "bli_test_token_not_real", env={"HOME": str(home)})
    start(daemons, home)
    run = run_hook(
        "prompt", prompt_payload(home), home, env=daemon_env(home, BLI_MEMORY_CONTAINER_TAG="repo_x")
    )
    _, status, fields = run.receipt()
    assert (status, fields["reason"], fields["via"]) == ("failed", "bad_config", "daemon"), run.stderr
