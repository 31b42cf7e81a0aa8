"""`bli-memory-door`'s command line (`door/cli/`): `serve` and its autopairing, `pair`, `tokens`,
`--help`, start-up errors, and its edges (a bad port, a missing database, a name with a newline,
autopair after the database was reset). Real subprocesses on a temporary HOME."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import BIN, LISTENING

DOOR = str(BIN / "bli-memory-door")


def run_door(*args: str, home: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share")}
    return subprocess.run([DOOR, *args], capture_output=True, text=True, env=env, timeout=timeout)


def _serve_until_listening(home: Path, *args: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "share"), "USER": "dana"}
    process = subprocess.Popen(
        [DOOR, "serve", "--port", "0", "--embedder", "none", *args],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    assert process.stderr is not None
    for line in process.stderr:
        lines.append(line)
        if line.startswith(LISTENING):
            return process, line[len(LISTENING) :].strip(), lines
    raise AssertionError("no listening line: " + "".join(lines))


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_bad_port_is_one_line(tmp_path: Path, port: str) -> None:
    done = run_door("serve", "--port", port, "--db", str(tmp_path / "m.db"), home=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "port" in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["serve", "--port", "http"], "bli-memory-door serve: argument --port: not a port number: 'http'"),
        (["bogus"], "bli-memory-door: argument COMMAND: invalid choice: 'bogus'"),
        (["tokens"], "bli-memory-door tokens: the following arguments are required: ACTION"),
        (
            ["migrate", "--from", "x.db", "--to"],
            "bli-memory-door migrate: argument --to: expected one argument",
        ),
    ],
)
def test_a_usage_error_is_one_line_naming_the_help_to_read(
    tmp_path: Path, args: list[str], said: str
) -> None:
    """argparse's usage dump was printed above the error (up to ten lines for a mistyped flag)."""
    done = run_door(*args, home=tmp_path)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.splitlines() == [done.stderr.strip()] and done.stderr.startswith(said), done.stderr
    assert "--help`)" in done.stderr


def test_a_usage_error_quoting_a_database_url_masks_its_password(tmp_path: Path) -> None:
    done = run_door("serve", "--dbx=postgresql://memory:s3cret-pw@db.internal/memory", home=tmp_path)
    assert done.returncode == 2 and "s3cret-pw" not in done.stderr, done.stderr
    assert "postgresql://memory:***@db.internal/memory" in done.stderr, done.stderr


def test_tokens_list_does_not_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "m.db"
    done = run_door("tokens", "list", "--db", str(missing), home=tmp_path)
    assert done.returncode == 1 and "no memory database" in done.stderr
    assert not missing.parent.exists()


def test_pair_refuses_a_name_with_a_newline(tmp_path: Path) -> None:
    done = run_door("pair", "--person", "a\nb", "--db", str(tmp_path / "m.db"), home=tmp_path)
    assert done.returncode == 2 and "one line" in done.stderr


def test_autopair_pairs_again_when_the_database_was_reset(tmp_path: Path) -> None:
    def serve_once(port: int) -> list[str]:
        env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "share"), "USER": "dana"}
        process = subprocess.Popen(
            [DOOR, "serve", "--port", str(port), "--embedder", "none"],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        lines = []
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if "listening on" in line:
                break
        process.terminate()
        process.wait(15)
        return lines

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = serve_once(port)
    session = tmp_path / ".config" / "bli-cockpit" / "session.json"
    token = json.loads(session.read_text())["device_token"]
    assert any("paired local user" in line for line in first)
    (tmp_path / "share" / "bli-memory" / "memory.db").unlink()
    for suffix in ("-wal", "-shm"):
        (tmp_path / "share" / "bli-memory" / f"memory.db{suffix}").unlink(missing_ok=True)
    time.sleep(0.2)
    second = serve_once(port)
    assert any("unknown to this database; pairing again" in line for line in second)
    assert json.loads(session.read_text())["device_token"] != token


def test_serve_pairs_the_local_user_once_with_a_private_session_file(tmp_path: Path) -> None:
    import urllib.request

    process, url, lines = _serve_until_listening(tmp_path)
    try:
        session = tmp_path / ".config" / "bli-cockpit" / "session.json"
        assert stat.S_IMODE(session.stat().st_mode) == 0o600
        assert stat.S_IMODE(session.parent.stat().st_mode) == 0o700
        data = json.loads(session.read_text())
        assert data["dashboard_url"] == url and data["device_token"].startswith("bli_")
        assert any("paired local user 'dana'" in line for line in lines)
        assert not any(data["device_token"] in line for line in lines)
        request = urllib.request.Request(
            url + "/api/memory/save",
            data=json.dumps({"content": "autopaired works", "containerTag": "t"}).encode(),
            headers={"Authorization": f"Bearer {data['device_token']}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 201
        # the default database lives under the XDG data folder
        assert (tmp_path / "share" / "bli-memory" / "memory.db").exists()
    finally:
        process.terminate()
        process.wait(15)
    assert process.returncode == 0
    before = session.read_bytes()
    process, _, lines = _serve_until_listening(tmp_path)
    process.terminate()
    process.wait(15)
    assert session.read_bytes() == before
    assert not any("paired" in line for line in lines)


def test_no_autopair_writes_nothing(tmp_path: Path) -> None:
    process, _, _ = _serve_until_listening(tmp_path, "--no-autopair", "--db", str(tmp_path / "m.db"))
    process.terminate()
    process.wait(15)
    assert not (tmp_path / ".config").exists()


def test_pair_prints_only_the_token_and_validates(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    done = run_door("pair", "--person", "sam", "--team", "acme", "--admin", "--db", db, home=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("bli_") and done.stdout.count("\n") == 1
    assert "shown once" in done.stderr and done.stdout.strip() not in done.stderr
    listing = run_door("tokens", "list", "--db", db, home=tmp_path)
    assert "acme/sam admin" in listing.stdout and "active" in listing.stdout
    blank = run_door("pair", "--person", "  ", "--db", db, home=tmp_path)
    assert blank.returncode == 2 and "non-empty printable text on one line" in blank.stderr
    missing = run_door("pair", "--db", db, home=tmp_path)
    assert missing.returncode == 2 and "--person" in missing.stderr


def test_start_up_errors_are_one_line(tmp_path: Path) -> None:
    postgres = run_door("serve", "--db", "postgresql://127.0.0.1:1/x", "--embedder", "none", home=tmp_path)
    assert postgres.returncode == 1 and "cannot connect to postgresql://127.0.0.1:1/x" in postgres.stderr
    assert postgres.stderr.count("\n") == 1
    assert "Traceback" not in postgres.stderr
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    broken = run_door("serve", "--db", str(garbage), "--embedder", "none", "--no-autopair", home=tmp_path)
    assert broken.returncode == 1 and "cannot open" in broken.stderr and "Traceback" not in broken.stderr
    assert garbage.read_bytes() == b"this is not a database" * 100
    newer = tmp_path / "newer.db"
    connection = sqlite3.connect(newer)
    connection.execute("PRAGMA user_version = 99")
    connection.close()
    too_new = run_door("serve", "--db", str(newer), "--embedder", "none", "--no-autopair", home=tmp_path)
    assert too_new.returncode == 1 and "newer than this door" in too_new.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        busy = run_door(
            "serve",
            "--port",
            port,
            "--db",
            str(tmp_path / "ok.db"),
            "--embedder",
            "none",
            "--no-autopair",
            home=tmp_path,
        )
    assert busy.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in busy.stderr


def test_help_is_helpful(tmp_path: Path) -> None:
    done = run_door("--help", home=tmp_path)
    assert done.returncode == 0
    for word in ("serve", "pair", "tokens"):
        assert word in done.stdout
    serve_help = run_door("serve", "--help", home=tmp_path)
    assert "--no-autopair" in serve_help.stdout and "--embedder" in serve_help.stdout


def test_the_listening_socket_says_tcp_so_answers_are_not_held_by_nagle() -> None:
    """asyncio sets TCP_NODELAY on accepted sockets only when the listener's proto is TCP; without it
    every answer waited for the client's delayed ACK (measured: 44 ms per /healthz, 2 ms with it)."""
    from bli_memory.door.cli.serve import _bind

    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
