"""`bli-memory-mcp login` / `logout` as a person runs them: real subprocesses, a temporary HOME, the
real door for the /healthz check, and a stand-in only for a door that answers 500."""

from __future__ import annotations

import http.server
import json
import os
import pty
import select
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bli_memory.settings import load_settings

BIN = Path(sys.executable).with_name("bli-memory-mcp")
TOKEN = "bli_test_token_0123456789abcdef"
PTY_DEADLINE_S = 20.0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("BLI_MEMORY_")}
    clean["HOME"] = str(home)
    return clean


def session_path(home: Path) -> Path:
    return home / ".config" / "bli-cockpit" / "session.json"


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *args],
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def failing_door() -> Iterator[str]:
    """A stand-in door whose /healthz answers 500."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"error":"internal","message":"boom"}'
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def assert_private_session(home: Path, url: str, token: str) -> None:
    path = session_path(home)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"dashboard_url": url, "device_token": token}


# --- login -------------------------------------------------------------------------------------


def test_login_with_a_piped_token_pairs_and_checks_the_door(
    door: Any, home: Path, env: dict[str, str]
) -> None:
    token = door.pair("login-tester")
    done = run(env, "login", "--url", door.url + "/", "--token-stdin", stdin=token + "\n")
    assert done.returncode == 0, done.stderr
    assert "the door answers: version" in done.stdout and "token accepted" in done.stdout
    assert done.stderr == ""
    assert token not in done.stdout + done.stderr
    assert_private_session(home, door.url, token)
    settings = load_settings(env)
    assert settings.paired and settings.door_url == door.url and settings.token == token


def test_login_json_reports_the_door(door: Any, home: Path, env: dict[str, str]) -> None:
    token = door.pair("login-json-tester")
    done = run(env, "login", "--url", door.url, "--token-stdin", "--json", stdin=token)
    body = json.loads(done.stdout)
    assert body["paired"] is True and body["url"] == door.url
    assert body["sessionFile"] == str(session_path(home))
    assert body["door"]["reachable"] is True and body["door"]["version"]
    assert body["door"]["token"] == "accepted"
    assert token not in done.stdout


def test_login_with_a_token_the_door_refuses_fails_and_keeps_the_earlier_pairing(
    door: Any, home: Path, env: dict[str, str]
) -> None:
    earlier = door.pair("earlier-pairing")
    assert run(env, "login", "--url", door.url, "--token-stdin", stdin=earlier).returncode == 0
    before = session_path(home).read_bytes()
    done = run(env, "login", "--url", door.url, "--token-stdin", stdin=TOKEN)
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "refused this device token" in done.stderr
    assert "nothing saved" in done.stderr and TOKEN not in done.stderr and "Traceback" not in done.stderr
    assert session_path(home).read_bytes() == before, "a refused token never replaces a working pairing"
    as_json = run(env, "login", "--url", door.url, "--token-stdin", "--json", stdin=TOKEN)
    assert as_json.returncode == 1
    body = json.loads(as_json.stdout)
    assert body["paired"] is False and body["door"]["token"] == "refused" and body["sessionFile"] is None


def test_login_with_a_refused_token_and_no_earlier_pairing_writes_no_file(
    door: Any, home: Path, env: dict[str, str]
) -> None:
    done = run(env, "login", "--url", door.url, "--token-stdin", stdin=TOKEN)
    assert done.returncode == 1
    assert not session_path(home).exists()


def test_login_to_an_unreachable_door_warns_but_pairs(home: Path, env: dict[str, str]) -> None:
    url = closed_port_url()
    done = run(env, "login", "--url", url, "--token-stdin", stdin=TOKEN)
    assert done.returncode == 0
    assert done.stderr.startswith("bli-memory-mcp login: warning: the door does not answer /healthz")
    assert "dashboard_unreachable" in done.stderr
    assert_private_session(home, url, TOKEN)


def test_login_to_a_failing_door_names_the_status(failing_door: str, home: Path, env: dict[str, str]) -> None:
    done = run(env, "login", "--url", failing_door, "--token-stdin", stdin=TOKEN)
    assert done.returncode == 0 and "http_500" in done.stderr
    assert_private_session(home, failing_door, TOKEN)


def test_login_without_the_check_does_not_touch_the_network(home: Path, env: dict[str, str]) -> None:
    done = run(
        env, "login", "--url", "https://memory.example.invalid", "--token-stdin", "--no-check", stdin=TOKEN
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert_private_session(home, "https://memory.example.invalid", TOKEN)


def test_login_replaces_an_earlier_pairing_and_tightens_the_folder(home: Path, env: dict[str, str]) -> None:
    folder = home / ".config" / "bli-cockpit"
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    session_path(home).write_text('{"dashboard_url": "http://old", "device_token": "old"}')
    done = run(env, "login", "--url", "http://127.0.0.1:1", "--token-stdin", "--no-check", stdin=TOKEN)
    assert done.returncode == 0
    assert_private_session(home, "http://127.0.0.1:1", TOKEN)


def test_login_notes_an_environment_override(home: Path, env: dict[str, str]) -> None:
    env["BLI_MEMORY_DEVICE_TOKEN"] = "from-env"
    done = run(env, "login", "--url", "http://127.0.0.1:1", "--token-stdin", "--no-check", stdin=TOKEN)
    assert done.returncode == 0
    assert "BLI_MEMORY_DEVICE_TOKEN set here override the session file" in done.stderr
    assert "from-env" not in done.stderr


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://door.example", "must start with http:// or https://"),
        ("door.example:8765", "must start with http:// or https://"),
        ("http://", "has no host"),
        ("http://ada:hunter2@door.example", "must not carry user info"),
        ("http://door.example/?token=hunter2", "must not carry a query"),
        ("http://door.example:99999", "invalid port"),
    ],
)
def test_login_refuses_a_bad_url_in_one_line(home: Path, env: dict[str, str], url: str, message: str) -> None:
    done = run(env, "login", "--url", url, "--token-stdin", stdin=TOKEN)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert "hunter2" not in done.stderr
    assert not session_path(home).exists()


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ("", "no token given"),
        ("\n", "no token given"),
        ("two words\n", "one word"),
        ("x" * 5000, "longer than"),
    ],
)
def test_login_refuses_a_bad_token(home: Path, env: dict[str, str], stdin: str, message: str) -> None:
    done = run(env, "login", "--url", "http://127.0.0.1:1", "--token-stdin", stdin=stdin)
    assert done.returncode == 2 and message in done.stderr
    assert done.stderr.count("\n") == 1
    assert not session_path(home).exists()


def test_login_without_a_terminal_or_token_stdin_says_how(home: Path, env: dict[str, str]) -> None:
    done = run(env, "login", "--url", "http://127.0.0.1:1")
    assert done.returncode == 2
    assert "--token-stdin" in done.stderr and done.stderr.count("\n") == 1
    assert not session_path(home).exists()


@pytest.mark.parametrize(
    "args", [["--url"], [], ["--url", "http://h", "--token", TOKEN], ["--url=http://h", TOKEN]]
)
def test_login_usage_errors_are_one_line_and_never_echo_a_token(env: dict[str, str], args: list[str]) -> None:
    done = run(env, "login", *args, stdin=TOKEN)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("bli-memory-mcp login: ")
    assert TOKEN not in done.stderr


def test_login_refuses_when_the_file_cannot_be_private(home: Path, env: dict[str, str]) -> None:
    (home / ".config").write_text("not a folder")
    done = run(env, "login", "--url", "http://127.0.0.1:1", "--token-stdin", "--no-check", stdin=TOKEN)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("bli-memory-mcp login: not paired: cannot")
    assert TOKEN not in done.stderr


def test_login_prompts_without_echo_on_a_terminal(home: Path, env: dict[str, str]) -> None:
    """The token typed at a real pseudo-terminal is saved and never echoed back."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: becomes the CLI with the pty as its controlling terminal
        os.execve(str(BIN), [str(BIN), "login", "--url", "http://127.0.0.1:1", "--no-check"], env)
    output = b""
    deadline = time.monotonic() + PTY_DEADLINE_S
    sent = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            if not sent and b"device token" in output:
                os.write(fd, TOKEN.encode() + b"\n")
                sent = True
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert sent, output
    assert os.waitstatus_to_exitcode(status) == 0, output
    assert TOKEN.encode() not in output
    assert b"paired with http://127.0.0.1:1" in output
    assert_private_session(home, "http://127.0.0.1:1", TOKEN)


def test_login_help_explains_where_the_token_comes_from(env: dict[str, str]) -> None:
    done = run(env, "login", "--help")
    assert done.returncode == 0
    assert "--token-stdin" in done.stdout and "never on the command line" in done.stdout
    assert "bli-memory-door pair" in done.stdout


# --- logout ------------------------------------------------------------------------------------


def test_logout_removes_the_session_file(home: Path, env: dict[str, str]) -> None:
    assert (
        run(
            env, "login", "--url", "http://127.0.0.1:1", "--token-stdin", "--no-check", stdin=TOKEN
        ).returncode
        == 0
    )
    done = run(env, "logout")
    assert done.returncode == 0 and "removed" in done.stdout
    assert not session_path(home).exists()
    assert not load_settings(env).paired
    again = run(env, "logout", "--json")
    assert again.returncode == 0
    assert json.loads(again.stdout) == {"removed": False, "sessionFile": str(session_path(home))}


def test_logout_help_and_bad_input(env: dict[str, str]) -> None:
    assert "revokes it" in run(env, "logout", "--help").stdout
    done = run(env, "logout", "--bogus")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
