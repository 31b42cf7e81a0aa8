"""Each hook as the host runs it: a subprocess with a JSON payload on stdin and a temporary HOME,
against the real door and against stand-ins that hang, refuse, answer 500, answer garbage, or answer
after the deadline. Every run must exit 0, print nothing or one whole block, leave exactly one
receipt with the right reason, hold its deadline, and count itself in the hourly stats."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bli_memory.hooks import receipt, stats
from bli_memory.settings import write_session
from tests.hooks.helpers import BIN, MARGIN_S, PROMPT, SESSION_START, STOP, Run, counts, hook_env, run_hook

# -- stand-ins for a door that misbehaves --------------------------------------------------------


class StandIn:
    """A loopback peer that accepts connections and then misbehaves as `mode` says; counts requests."""

    def __init__(self, mode: str, delay_s: float = 0.0) -> None:
        self.mode = mode
        self.delay_s = delay_s
        self.requests = 0
        self.bodies: list[bytes] = []
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket) -> bytes:
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        return body

    def _handle(self, conn: socket.socket) -> None:
        try:
            body = self._read_request(conn)
            self.requests += 1
            self.bodies.append(body)
            if self.mode == "hang":
                self._held.append(conn)
                return
            if self.delay_s:
                self._stop.wait(self.delay_s)
            if self.mode == "500":
                payload = b'{"error":"internal","message":"boom at /srv/door/secret.py"}'
                conn.sendall(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                    + payload
                )
            elif self.mode == "garbage":
                conn.sendall(b"\x00\x17 this is not http at all \xff\r\n\r\n")
            elif self.mode == "not_json":
                payload = b"<html>hello</html>"
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                    + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                    + payload
                )
            elif self.mode == "ok":
                payload = b'{"results":[],"searched":["x"],"queued":true,"jobId":"job_1","containerTag":"x"}'
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                    + payload
                )
            conn.close()
        except OSError:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for conn in self._held:
            conn.close()
        self._thread.join(2)


def refused_url() -> str:
    """A loopback port with nobody listening."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def stand_in() -> Iterator[list[StandIn]]:
    made: list[StandIn] = []
    yield made
    for peer in made:
        peer.close()


def paired_env(home: Path, url: str, tag: str = "repo_test_hooks") -> dict[str, str]:
    write_session(url, "bli_test_token_not_real", env={"HOME": str(home)})
    return hook_env(home, BLI_MEMORY_CONTAINER_TAG=tag)


PAYLOADS = {"prompt": PROMPT, "session-start": SESSION_START, "stop": STOP}
TAGS = {"prompt": "bli-memory-recall", "session-start": "bli-memory-context"}


def assert_quiet_failure(run: Run, event: str, reason: str) -> None:
    assert run.returncode == 0
    hook, status, fields = run.receipt()
    assert (hook, status, fields["reason"]) == (event, "failed", reason), run.stderr
    assert fields["via"] == "direct"
    if event == "stop":  # a failed save is the one failure a person hears about
        assert json.loads(run.stdout)["systemMessage"].startswith("[bli] ")
        assert run.stdout.count("\n") == 1
    else:
        assert run.stdout == ""
    assert "Traceback" not in run.stderr and "secret" not in run.stderr


# -- a door that misbehaves ---------------------------------------------------------------------------


@pytest.mark.parametrize("event", ["prompt", "session-start", "stop"])
@pytest.mark.parametrize(
    ("mode", "reason"), [("500", "http_500"), ("garbage", "bad_response"), ("not_json", "bad_response")]
)
def test_a_door_that_answers_badly_is_a_quiet_named_failure(
    event: str, mode: str, reason: str, home: Path, stand_in: list[StandIn]
) -> None:
    peer = StandIn(mode)
    stand_in.append(peer)
    run = run_hook(event, PAYLOADS[event], home, env=paired_env(home, peer.url))
    assert_quiet_failure(run, event, reason)
    assert peer.requests == 1
    assert counts(home, event)["failed"] == 1


@pytest.mark.parametrize("event", ["prompt", "session-start", "stop"])
def test_a_door_that_refuses_is_dashboard_unreachable(event: str, home: Path) -> None:
    run = run_hook(event, PAYLOADS[event], home, env=paired_env(home, refused_url()))
    assert_quiet_failure(run, event, "dashboard_unreachable")
    assert run.elapsed_s < 2.0


def test_a_door_that_hangs_costs_the_prompt_its_deadline_and_no_more(
    home: Path, stand_in: list[StandIn]
) -> None:
    peer = StandIn("hang")
    stand_in.append(peer)
    run = run_hook("prompt", PROMPT, home, env=paired_env(home, peer.url))
    assert_quiet_failure(run, "prompt", "timeout")
    _, _, fields = run.receipt()
    assert fields["deadline_ms"] == 2000
    assert 1900 <= int(str(fields["elapsed_ms"])) <= 2300
    assert run.elapsed_s < 2.0 + MARGIN_S


def test_a_door_slower_than_the_deadline_is_a_timeout(home: Path, stand_in: list[StandIn]) -> None:
    peer = StandIn("ok", delay_s=3.0)
    stand_in.append(peer)
    run = run_hook("prompt", PROMPT, home, env=paired_env(home, peer.url))
    assert_quiet_failure(run, "prompt", "timeout")
    assert run.elapsed_s < 2.0 + MARGIN_S


def test_session_start_holds_its_eight_second_deadline(home: Path, stand_in: list[StandIn]) -> None:
    peer = StandIn("hang")
    stand_in.append(peer)
    run = run_hook("session-start", SESSION_START, home, env=paired_env(home, peer.url))
    assert_quiet_failure(run, "session-start", "timeout")
    assert run.elapsed_s < 8.0 + MARGIN_S


# -- stdin ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("event", ["prompt", "session-start", "stop"])
@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"", "stdin_empty"), (b"{not json", "stdin_malformed"), (b'"a string"', "stdin_malformed")],
)
def test_a_bad_payload_never_touches_the_door(
    event: str, data: bytes, reason: str, home: Path, stand_in: list[StandIn]
) -> None:
    peer = StandIn("ok")
    stand_in.append(peer)
    run = run_hook(event, data, home, env=paired_env(home, peer.url))
    assert_quiet_failure(run, event, reason)
    assert peer.requests == 0


def test_an_oversized_payload_is_stdin_too_large(home: Path) -> None:
    data = json.dumps({"prompt": "x" * (5 * 1024 * 1024)}).encode()
    run = run_hook("prompt", data, home)
    assert_quiet_failure(run, "prompt", "stdin_too_large")


def test_a_stdin_that_never_closes_nor_speaks_times_out(home: Path) -> None:
    run = run_hook("prompt", b"", home, keep_stdin_open=True)
    assert_quiet_failure(run, "prompt", "stdin_timeout")
    assert run.elapsed_s < 1.0 + MARGIN_S


def test_a_whole_payload_on_a_stdin_left_open_is_still_answered(home: Path) -> None:
    run = run_hook("prompt", {"prompt": "ok"}, home, keep_stdin_open=True)
    assert run.receipt()[1:] == ("skipped", {"reason": "trivial_prompt", "via": "direct"})
    assert run.elapsed_s < 1.0


def test_no_stdin_at_all_is_no_stdin(home: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [BIN, "hook", "prompt"], stdin=subprocess.DEVNULL, capture_output=True, env=hook_env(home), timeout=30
    )
    assert done.returncode == 0 and done.stdout == b""
    assert "stdin_empty" in done.stderr.decode()  # /dev/null is a file at EOF
    assert time.monotonic() - started < 2
    closed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; os.close(0); from bli_memory.hooks.run import main; sys.exit(main(['prompt']))",
        ],
        capture_output=True,
        env=hook_env(home),
        timeout=30,
    )
    assert closed.returncode == 0 and closed.stdout == b""
    assert '"reason":"no_stdin"' in closed.stderr.decode()


# -- local skips ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("event", ["prompt", "session-start", "stop"])
def test_an_unpaired_machine_is_quiet(event: str, home: Path) -> None:
    run = run_hook(event, PAYLOADS[event], home)
    assert run.returncode == 0 and run.stdout == ""
    assert run.receipt() == (event, "skipped", {"reason": "unpaired", "via": "direct"})
    assert counts(home, event)["skipped"] == 1


def test_a_trivial_prompt_makes_no_door_call_and_is_counted(home: Path, stand_in: list[StandIn]) -> None:
    peer = StandIn("ok")
    stand_in.append(peer)
    env = paired_env(home, peer.url)
    for text in ("ok", "continue", "/compact", "thanks!"):
        run = run_hook("prompt", {**PROMPT, "prompt": text}, home, env=env)
        assert run.returncode == 0 and run.stdout == ""
        assert run.receipt() == ("prompt", "skipped", {"reason": "trivial_prompt", "via": "direct"})
    empty = run_hook("prompt", {**PROMPT, "prompt": "   "}, home, env=env)
    assert empty.receipt() == ("prompt", "skipped", {"reason": "no_prompt", "via": "direct"})
    assert peer.requests == 0
    row = counts(home, "prompt")
    assert row["skipped_trivial"] == 4 and row["skipped"] == 5 and row["runs"] == 5


def test_a_reentrant_stop_saves_nothing(home: Path, stand_in: list[StandIn]) -> None:
    peer = StandIn("ok")
    stand_in.append(peer)
    run = run_hook("stop", {**STOP, "stop_hook_active": True}, home, env=paired_env(home, peer.url))
    assert run.stdout == "" and run.receipt() == ("stop", "skipped", {"reason": "reentrant", "via": "direct"})
    assert peer.requests == 0


def test_a_stop_with_nothing_to_save_is_no_transcript(home: Path, stand_in: list[StandIn]) -> None:
    peer = StandIn("ok")
    stand_in.append(peer)
    payload = {"session_id": "s1", "transcript_path": str(home / "missing.jsonl"), "stop_hook_active": False}
    run = run_hook("stop", payload, home, env=paired_env(home, peer.url))
    assert run.stdout == "" and run.receipt() == (
        "stop",
        "skipped",
        {"reason": "no_transcript", "via": "direct"},
    )
    assert peer.requests == 0


def test_a_probe_run_says_stats_excluded_and_counts_nowhere(home: Path) -> None:
    run = run_hook("prompt", {**PROMPT, "prompt": "ok"}, home, "--probe")
    assert run.receipt() == (
        "prompt",
        "skipped",
        {"reason": "trivial_prompt", "via": "direct", "probe": "stats_excluded"},
    )
    assert not os.path.exists(stats.stats_dir({"HOME": str(home)}))


# -- Codex ---------------------------------------------------------------------------------------------


def test_codex_stop_prints_an_empty_object_never_nothing_nor_text(home: Path) -> None:
    by_flag = run_hook("stop", {**STOP, "stop_hook_active": True}, home, "--host", "codex")
    assert by_flag.stdout == "{}\n"
    by_payload = run_hook("stop", {**STOP, "turn_id": "t1", "stop_hook_active": True}, home)
    assert by_payload.stdout == "{}\n"
    claude = run_hook("stop", {**STOP, "stop_hook_active": True}, home)
    assert claude.stdout == ""


def test_codex_stop_failure_is_a_schema_valid_system_message(home: Path) -> None:
    run = run_hook(
        "stop", {**STOP, "turn_id": "t1"}, home, "--host=codex", env=paired_env(home, refused_url())
    )
    assert set(json.loads(run.stdout)) == {"systemMessage"}


def test_unknown_flags_are_ignored(home: Path) -> None:
    run = run_hook("prompt", {**PROMPT, "prompt": "ok"}, home, "--future-flag")
    assert run.returncode == 0 and run.receipt()[1] == "skipped"


@pytest.mark.parametrize(
    ("argv", "hook"),
    [(["user-prompt"], "user-prompt"), (["--probe"], "hook"), ([], "hook"), (["a b;"], "hook")],
)
def test_an_unknown_or_missing_event_exits_0_with_one_failed_receipt(
    home: Path, argv: list[str], hook: str
) -> None:
    """Exit 2 would make Claude Code block the prompt and erase it: a wrong event name costs nothing."""
    done = subprocess.run(
        [BIN, "hook", *argv],
        input=json.dumps(PROMPT).encode(),
        capture_output=True,
        env=hook_env(home),
        timeout=30,
    )
    run = Run(done.returncode, done.stdout.decode(), done.stderr.decode(), 0.0)
    assert run.returncode == 0 and run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
    expected: dict[str, object] = {"reason": "unknown_event", "via": "direct"}
    if "--probe" in argv:
        expected["probe"] = "stats_excluded"
    assert run.receipt() == (hook, "failed", expected)


@pytest.mark.parametrize("event", ["prompt", "session-start", "stop"])
@pytest.mark.parametrize("url", ["ftp://door.example", "http://", "http://door.example:99999", "door"])
def test_an_unusable_door_url_is_bad_config(event: str, url: str, home: Path) -> None:
    write_session(url, "bli_test_token_not_real", env={"HOME": str(home)})
    run = run_hook(event, PAYLOADS[event], home, env=hook_env(home, BLI_MEMORY_CONTAINER_TAG="repo_x"))
    assert_quiet_failure(run, event, "bad_config")


def write_transcript(path: Path, *turns: tuple[str, str]) -> None:
    lines = []
    for prompt, reply in turns:
        lines.append({"type": "user", "message": {"role": "user", "content": prompt}})
        lines.append(
            {
                "type": "assistant",
                "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]},
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_stop_pairs_the_reply_with_this_turns_prompt_when_the_transcript_lags(
    home: Path, stand_in: list[StandIn]
) -> None:
    """Transcript: prompt A + reply A (it lags); payload: reply B. Saved: prompt B with reply B."""
    peer = StandIn("ok")
    stand_in.append(peer)
    env = paired_env(home, peer.url)
    log = home / "session.jsonl"
    write_transcript(log, ("Prompt A about the cache", "Reply A about the cache"))
    payload = {
        **STOP,
        "session_id": "sess-1",
        "transcript_path": str(log),
        "last_assistant_message": "Reply B",
    }
    for text in ("Prompt B about the daemon", "continue"):  # a trivial prompt is this turn's prompt too
        prompted = run_hook("prompt", {**PROMPT, "session_id": "sess-1", "prompt": text}, home, env=env)
        assert prompted.returncode == 0
        run = run_hook("stop", payload, home, env=env)
        assert run.receipt()[1] == "ok", run.stderr
        saved = json.loads(peer.bodies[-1])["content"]
        assert saved == f"User: {text}\n\nAssistant: Reply B" and "Prompt A" not in saved
    # no remembered prompt (taken by the last Stop): the transcript's prompt cannot be shown to be B's
    run_hook("stop", payload, home, env=env)
    assert json.loads(peer.bodies[-1])["content"] == "Assistant: Reply B"
    # caught up: the transcript holds this reply after its prompt, so that prompt is this turn's
    write_transcript(log, ("Prompt A about the cache", "Reply A"), ("Prompt B about the daemon", "Reply B"))
    run_hook("stop", payload, home, env=env)
    assert json.loads(peer.bodies[-1])["content"] == "User: Prompt B about the daemon\n\nAssistant: Reply B"


def test_the_backstop_timer_interrupts_a_run_that_ignores_the_clock() -> None:
    from bli_memory.hooks import run

    started = time.monotonic()
    assert run._arm_backstop(started + 0.1)
    with pytest.raises(run.HookDeadline):
        time.sleep(2)
    run._disarm_backstop()
    assert time.monotonic() - started < 0.5
    assert receipt.failed(run.HookDeadline())["reason"] == "timeout"


def test_answer_never_raises_and_names_an_internal_failure() -> None:
    from bli_memory.hooks import run
    from bli_memory.settings import Settings

    broken = Settings(
        door_url="http://127.0.0.1:1",
        token="t",
        container_tag=None,
        isolate_worktrees=False,
        daemon_enabled=False,
    )
    result = run.answer(
        "stop", {"last_assistant_message": 42, "transcript_path": 7}, "/", via="daemon", settings=broken
    )
    assert result.outcome == {"status": "skipped", "reason": "no_transcript", "via": "daemon"}
    odd = run.answer("nonsense", {}, "/", via="direct")
    assert odd.stdout == "" and odd.outcome["reason"] == "unknown_event"
