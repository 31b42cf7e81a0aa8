"""The human commands (`search`, `save`, `forget`, `status`, `log`, `sync`) as subprocesses.

Each run gets a temporary HOME; pairing goes through the real session file, the door is the real one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bli_memory.settings import UNPAIRED_MESSAGE, write_session

BIN = Path(sys.executable).parent / "bli-memory-mcp"
RUN_TIMEOUT_S = 60.0


class Cli:
    """`bli-memory-mcp` with a HOME of its own, paired (or not) through the session file."""

    def __init__(self, home: Path, cwd: Path, extra_env: dict[str, str] | None = None) -> None:
        self.home = home
        self.cwd = cwd
        self.env = {
            "HOME": str(home),
            "PATH": os.environ["PATH"],
            "BLI_MEMORY_DAEMON": "0",
            **(extra_env or {}),
        }

    def pair(self, url: str, token: str) -> Cli:
        write_session(url, token, env={"HOME": str(self.home)})
        return self

    def __call__(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.cwd,
            timeout=RUN_TIMEOUT_S,
        )


@pytest.fixture
def cli(tmp_path: Path, door: Any, tag: str) -> Cli:
    home = tmp_path / "home"
    home.mkdir()
    return Cli(home, tmp_path, {"BLI_MEMORY_CONTAINER_TAG": tag}).pair(door.url, door.token)


@pytest.fixture
def unpaired(tmp_path: Path) -> Cli:
    home = tmp_path / "home"
    home.mkdir()
    return Cli(home, tmp_path)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_save_then_search_then_forget_by_id(cli: Cli, tag: str) -> None:
    word = f"narwhal{uuid.uuid4().hex[:6]}"
    saved = cli("save", "The", word, "service", "restarts", "at", "03:00")
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.startswith("Saved memory mem_") and f"in space {tag}" in saved.stdout

    found = cli("search", word, "--json")
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    (memory,) = answer["memories"]
    assert memory["content"] == f"The {word} service restarts at 03:00"
    assert memory["age"] == "<1h"

    text = cli("search", word)
    assert f"[id {memory['id']} · <1h · scope project · source {tag}]" in text.stdout
    assert f"   The {word} service restarts at 03:00" in text.stdout

    forgot = cli("forget", "--id", memory["id"])
    assert forgot.returncode == 0, forgot.stderr
    assert forgot.stdout.startswith(f"Forgot memory {memory['id']} in space {tag} (by id)")
    silent = cli("search", word)
    assert silent.returncode == 0  # silence is data
    assert silent.stdout.startswith(f"The record is silent on “{word}”")


def test_save_from_stdin_with_custom_id_and_forget_by_exact_text(cli: Cli) -> None:
    key = f"owner-{uuid.uuid4().hex[:6]}"
    first = cli("save", "--stdin", "--custom-id", key, "--json", stdin=f"{key}: Ana\n")
    assert json.loads(first.stdout)["status"] == "created"
    again = cli("save", "--custom-id", key, "--json", f"{key}: Bo")
    assert json.loads(again.stdout)["status"] == "updated"
    forgot = cli("forget", "--content", f"{key}: Bo", "--json")
    assert forgot.returncode == 0
    assert json.loads(forgot.stdout)["match"] == "exact"
    nothing = cli("forget", "--content", f"{key}: Bo")
    assert nothing.returncode == 1  # asked to remove something, nothing matched
    assert "Nothing forgotten" in nothing.stdout


def test_forget_closest_without_an_embedder_forgets_nothing(cli: Cli) -> None:
    cli("save", "The quarterly report is due on the fifth")
    result = cli("forget", "--query", "quarterly report due date")
    assert result.returncode == 1
    assert "cosine similarity ≥ 0.85" in result.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["search"], "the following arguments are required: QUERY"),
        (["search", "--limit", "0", "x"], "must be between 1 and 100"),
        (["search", "   "], "QUERY must not be empty"),
        (["save"], "nothing to save"),
        (["save", "--stdin", "text"], "give TEXT or --stdin, not both"),
        (["forget"], "one of the arguments --id --content --query is required"),
        (["forget", "--id", "a", "--query", "b"], "not allowed with argument"),
        (["forget", "--id", " "], "must not be empty"),
        (["status", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli: Cli, args: list[str], needle: str) -> None:
    result = cli(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and needle in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["search", "save", "forget", "status"])
def test_every_command_has_a_helpful_help(unpaired: Cli, command: str) -> None:
    result = unpaired(command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: bli-memory-mcp {command}")
    assert "--json" in result.stdout and "exit status" in result.stdout


@pytest.mark.parametrize("args", [["search", "x"], ["save", "x"], ["forget", "--id", "x"]])
def test_unpaired_says_one_sentence_and_exits_1(unpaired: Cli, args: list[str]) -> None:
    result = unpaired(*args)
    assert result.returncode == 1
    assert result.stderr == UNPAIRED_MESSAGE + "\n"
    assert result.stdout == ""


def test_a_door_failure_is_one_line_with_its_reason_and_exit_1(unpaired: Cli) -> None:
    unpaired.pair(f"http://127.0.0.1:{closed_port()}", "bli_unused_token")
    result = unpaired("search", "anything")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1
    assert "reason: dashboard_unreachable" in result.stderr
    assert "bli_unused_token" not in result.stderr
    as_json = unpaired("save", "x", "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["error"]["reason"] == "dashboard_unreachable"


def test_status_of_a_healthy_pairing(cli: Cli, door: Any, tag: str) -> None:
    result = cli("status")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines[0] == f"paired:  yes (door {door.url}, token from {cli.home}/.config/bli-cockpit/session.json)"
    )
    assert lines[1].startswith("door:    reachable, version 0.") and "embedder none" in lines[1]
    assert lines[2] == "token:   accepted"
    assert lines[3].startswith("daemon:  not running (no socket;")
    assert lines[4] == f"space:   {tag} (of {cli.cwd})"
    assert door.token not in result.stdout + result.stderr
    data = json.loads(cli("status", "--json").stdout)
    assert data["healthy"] is True and data["door"]["token"] == "accepted"
    assert data["space"]["containerTag"] == tag and data["daemon"]["alive"] is False


def test_status_with_a_revoked_token_or_no_door_fails(tmp_path: Path, door: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    refused = Cli(home, tmp_path).pair(door.url, "bli_not_a_real_token")("status", "--json")
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["door"]["token"] == "refused"
    down = Cli(home, tmp_path).pair(f"http://127.0.0.1:{closed_port()}", "bli_x")("status")
    assert down.returncode == 1
    assert "door:    unreachable (dashboard_unreachable)" in down.stdout


def test_status_says_when_the_door_answers_but_cannot_write(tmp_path: Path, start_door: Any) -> None:
    """A door whose background check found its file damaged answers /healthz with 503 and why: status
    shows it reachable, says it cannot write and why, and fails (it used to say "unreachable")."""
    first = start_door("--embedder", "none")
    assert first.stop() == 0
    with sqlite3.connect(first.db) as db:  # garbage over a table searches and saves never read
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'hook_stats'").fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    with open(first.db, "r+b") as file:
        file.seek((page - 1) * page_size)
        file.write(b"\xa5" * page_size)
    door = start_door("--embedder", "none", env={"BLI_MEMORY_INTEGRITY_CHECK_BUDGET_S": "0"})
    deadline = time.monotonic() + 30
    while door.get("/healthz")[1].get("integrityCheck") != "damaged":
        assert time.monotonic() < deadline, door.lines
        time.sleep(0.05)
    home = tmp_path / "home"
    home.mkdir()
    cli = Cli(home, tmp_path).pair(door.url, door.token)
    result = cli("status")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "door:    reachable, version 0." in result.stdout
    assert f"store:   cannot write (store_damaged): {first.db} is damaged (" in result.stdout
    data = json.loads(cli("status", "--json").stdout)
    assert data["healthy"] is False and data["door"]["problem"]["reason"] == "store_damaged"
    assert data["door"]["integrityCheck"] == "damaged" and data["door"]["token"] == "accepted"


def test_status_unpaired_still_shows_the_space(unpaired: Cli) -> None:
    result = unpaired("status")
    assert result.returncode == 1
    assert result.stdout.startswith("paired:  no")
    assert "space:   dir_" in result.stdout
    assert result.stderr == UNPAIRED_MESSAGE + "\n"


@pytest.fixture
def short_home() -> Iterator[Path]:
    """A HOME short enough for a unix socket path under it (sun_path is ~108 bytes)."""
    home = Path(tempfile.mkdtemp(prefix="bm", dir="/tmp"))
    yield home
    shutil.rmtree(home, ignore_errors=True)


def serve_one_answer(path: Path, answer: bytes) -> threading.Thread:
    """A stand-in daemon socket answering one connection with `answer` (real or garbage)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(RUN_TIMEOUT_S)

    def run() -> None:
        with server:
            connection, _ = server.accept()
            with connection:
                connection.recv(4096)
                connection.sendall(answer)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (b'{"stdout": "", "outcome": {"pong": true}}\n', "daemon:  alive ("),
        (b"garbage\n", "daemon:  not running (answer is not JSON;"),
    ],
)
def test_status_pings_the_daemon_socket(
    short_home: Path, tmp_path: Path, answer: bytes, expected: str
) -> None:
    thread = serve_one_answer(short_home / ".local/state/bli-cockpit/memory-daemon.sock", answer)
    result = Cli(short_home, tmp_path)("status")
    thread.join(RUN_TIMEOUT_S)
    assert expected in result.stdout


LOG_LINE = re.compile(
    r"^- \d{4}-\d\d-\d\d \d\d:\d\d ICT · (?P<agent>[^·]+) · (?P<project>[^·]+) · (?P<store>\S+) (?P<marker>\S+) · (?P<verdict>\w+): (?P<reason>.+)$"
)


def outbox(home: Path) -> list[dict[str, Any]]:
    folder = home / ".codex" / "agent-experience-outbox"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def test_log_appends_a_receipt_and_ships_it(cli: Cli, door: Any) -> None:
    reason = f"The dated decision answered the question directly {uuid.uuid4().hex[:6]}"
    result = cli("log", "win", "--store", "bli", reason, "--agent", "claude-code", "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["shipped"] is True and answer["reason"] is None
    (line,) = (cli.home / ".codex" / "AGENT-EXPERIENCE.md").read_text().splitlines()
    match = LOG_LINE.match(line)
    assert match is not None, line
    assert match["agent"] == "claude-code" and match["project"] == cli.cwd.name
    assert (match["store"], match["marker"], match["verdict"], match["reason"]) == (
        "bli",
        "[bli]",
        "win",
        reason,
    )
    (entry,) = outbox(cli.home)
    assert entry["id"] == answer["id"] and entry["shipped"] is True and entry["receipt"] == line
    status, usage = door.get("/api/ops/memory-usage")
    assert status == 200 and reason in json.dumps(usage)


def test_both_stores_carry_both_markers_and_stdin_reasons_work(cli: Cli) -> None:
    result = cli(
        "log", "noise", "--store", "both", "--reason-stdin", stdin="Both recalls repeated the prompt\n"
    )
    assert result.returncode == 0, result.stderr
    match = LOG_LINE.match(result.stdout.splitlines()[0])
    assert (
        match is not None
        and match["marker"] == "[bli]+◪"
        and match["reason"] == "Both recalls repeated the prompt"
    )


def test_an_unshipped_entry_waits_for_sync_under_the_same_id(unpaired: Cli, door: Any) -> None:
    logged = unpaired(
        "log", "loss", "--store", "supermemory", "Recall", "missed", "the", "migration", "--json"
    )
    assert logged.returncode == 0
    answer = json.loads(logged.stdout)
    assert answer["shipped"] is False and answer["reason"] == "unpaired"
    assert unpaired("sync").returncode == 1  # unpaired: one sentence, exit 1

    unpaired.pair(f"http://127.0.0.1:{closed_port()}", "bli_x")
    down = unpaired("sync", "--json")
    assert down.returncode == 1
    assert json.loads(down.stdout) == {
        "shipped": 0,
        "rejected": 0,
        "queued": 1,
        "stopped": "dashboard_unreachable",
        "hookStats": {"hours": 0, "failed": None},  # no hook ran on this machine: nothing to send
    }

    unpaired.pair(door.url, door.token)
    synced = unpaired("sync", "--json")
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout) == {
        "shipped": 1,
        "rejected": 0,
        "queued": 0,
        "stopped": None,
        "hookStats": {"hours": 0, "failed": None},
    }
    (entry,) = outbox(unpaired.home)
    assert entry["id"] == answer["id"] and entry["shipped"] is True
    assert json.loads(unpaired("sync", "--json").stdout)["shipped"] == 0


def test_a_conflicting_entry_is_rejected_and_does_not_block_the_queue(cli: Cli) -> None:
    first = json.loads(cli("log", "win", "--store", "bli", "first opinion", "--json").stdout)
    folder = cli.home / ".codex" / "agent-experience-outbox"
    (entry,) = outbox(cli.home)
    forged = {**entry, "reason": "a different opinion under the same id", "shipped": False}
    (folder / "forged.json").write_text(json.dumps(forged))
    result = cli("sync", "--json")
    assert json.loads(result.stdout) == {
        "shipped": 0,
        "rejected": 1,
        "queued": 0,
        "stopped": None,
        "hookStats": {"hours": 0, "failed": None},
    }
    assert first["shipped"] is True


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [
        (["log", "win", "--store", "bli", "--reason-stdin"], "two\nlines", "one line"),
        (["log", "win", "--store", "bli", "x" * 501], "", "at most 500"),
        (["log", "win", "--store", "bli"], "", "the reason is empty"),
        (["log", "meh", "--store", "bli", "x"], "", "invalid choice: 'meh'"),
        (["log", "win", "x"], "", "the following arguments are required: --store"),
        (
            ["log", "win", "--store", "bli", "token ghp_" + "a1B2c3D4e5" * 4],
            "",
            "looks like it holds a secret",
        ),
    ],
)
def test_log_refuses_bad_reasons_in_one_line(unpaired: Cli, args: list[str], stdin: str, needle: str) -> None:
    result = unpaired(*args, stdin=stdin)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and needle in result.stderr, result.stderr
    assert not (unpaired.home / ".codex").exists()


@pytest.mark.parametrize("args", [["search", "x"], ["save", "x"], ["sync"], []])
def test_an_unusable_door_url_is_one_line_not_a_traceback(unpaired: Cli, args: list[str]) -> None:
    unpaired.env.update(BLI_MEMORY_DASHBOARD_URL="ftp://door.example", BLI_MEMORY_DEVICE_TOKEN="bli_secret_x")
    if args == ["sync"]:
        unpaired("log", "win", "--store", "bli", "queued first")
    result = unpaired(*args)
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and "the door URL is not usable" in result.stderr
    assert "Traceback" not in result.stderr and "bli_secret_x" not in result.stderr


def run_into_a_closed_pipe(cli: Cli, *args: str) -> subprocess.CompletedProcess[str]:
    """Run with stdout a pipe whose reader has already gone (`... | head -0`, deterministically)."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [str(BIN), *args],
            stdin=subprocess.DEVNULL,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            env=cli.env,
            cwd=cli.cwd,
            timeout=RUN_TIMEOUT_S,
        )
    finally:
        os.close(writer)


@pytest.mark.parametrize(
    "args",
    [
        ["--print-config"],
        ["--help"],
        ["--version"],
        ["space"],
        ["status"],
        ["search", "--help"],
        ["install", "--dry-run"],
        ["uninstall", "--dry-run"],
    ],
)
def test_a_reader_that_went_away_ends_the_command_quietly(unpaired: Cli, args: list[str]) -> None:
    result = run_into_a_closed_pipe(unpaired, *args)
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
    assert result.returncode == 141
    assert not (unpaired.home / ".claude.json").exists(), "a dry run stays dry"


def test_status_never_prints_the_credential_of_a_door_url(unpaired: Cli) -> None:
    port = closed_port()
    unpaired.env.update(
        BLI_MEMORY_DASHBOARD_URL=f"http://u:s3cretpw@127.0.0.1:{port}/base?token=t0psecret",
        BLI_MEMORY_DEVICE_TOKEN="bli_x",
    )
    for args in (["status"], ["status", "--json"]):
        result = unpaired(*args)
        assert result.returncode == 1
        shown = result.stdout + result.stderr
        assert "s3cretpw" not in shown and "t0psecret" not in shown and "u:" not in shown, shown
        assert f"http://***@127.0.0.1:{port}/base?***" in shown


def test_search_applies_the_similarity_floor_unless_threshold_is_given(
    tmp_path: Path, door_onnx: Any, tag: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    cli = Cli(home, tmp_path, {"BLI_MEMORY_CONTAINER_TAG": tag}).pair(door_onnx.url, door_onnx.token)
    memories = [
        "Production deploys need two approvals from the platform team.",
        "We pinned numpy below 2.0 because onnxruntime wheels broke.",
        "Alice owns the billing service and its on-call rotation.",
    ]
    for content in memories:
        assert cli("save", content).returncode == 0
    silent = cli("search", "zebra", "quantum", "flux")
    assert silent.returncode == 0 and silent.stdout.startswith("The record is silent on"), silent.stdout
    everything = json.loads(cli("search", "--threshold", "0", "--json", "zebra quantum flux").stdout)
    assert len(everything["memories"]) == len(memories) and everything["minSimilarity"] == 0
    strict = json.loads(cli("search", "--threshold", "0.99", "--json", "why is numpy pinned").stdout)
    assert strict["silent"] is True
    found = json.loads(cli("search", "--json", "why is numpy pinned").stdout)
    assert found["memories"][0]["content"] == memories[1]
    for bad in ("1.5", "-0.1", "nan", "x"):
        refused = cli("search", "--threshold", bad, "q")
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr


def test_a_door_whose_certificate_is_not_trusted_is_not_called_stopped(unpaired: Cli, tmp_path: Path) -> None:
    """A stand-in TLS door with a self-signed certificate: the client refuses it during the handshake."""
    import ssl

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    made = subprocess.run(
        [*request, "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert made.returncode == 0, made.stderr
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(RUN_TIMEOUT_S)

    def serve() -> None:
        with server:
            connection, _ = server.accept()
            try:
                with context.wrap_socket(connection, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass  # the client hangs up on our certificate: that is the point

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    unpaired.pair(f"https://127.0.0.1:{server.getsockname()[1]}", "bli_unused_token")
    result = unpaired("search", "anything")
    thread.join(RUN_TIMEOUT_S)
    assert result.returncode == 1 and len(result.stderr.splitlines()) == 1
    assert "reason: dashboard_unreachable" in result.stderr
    assert "TLS" in result.stderr and "nothing answered" not in result.stderr, result.stderr


# --------------------------------------------------------------------------- one error, one boundary

#: (command as typed, the module and function `bli_memory.cli` dispatches it to, its exit status).
FAILING_COMMANDS = [
    (["search", "--limit", "0", "x"], "bli_memory.commands.search", "main", 2),
    (["search", "anything"], "bli_memory.commands.search", "main", 1),  # unpaired
    (["save", "--stdin", "text"], "bli_memory.commands.save", "main", 2),
    (["forget", "--id", " "], "bli_memory.commands.forget", "main", 2),
    (["space", "--bogus"], "bli_memory.commands.space", "main", 2),
    (["log", "win", "--store", "bli"], "bli_memory.commands.experience", "log_main", 2),
    (["login", "--bogus"], "bli_memory.commands.login", "login_main", 2),
    (["login", "--url", "ftp://door", "--token-stdin"], "bli_memory.commands.login", "login_main", 2),
    (["install", "--host", "vim"], "bli_memory.install.cli", "install_main", 2),
    (["--print-config=vim"], "bli_memory.install.cli", "print_config_main", 2),
]


@pytest.mark.parametrize(("argv", "module", "function", "status"), FAILING_COMMANDS)
def test_commands_raise_one_cli_error_that_the_entry_point_prints_as_one_line(
    argv: list[str],
    module: str,
    function: str,
    status: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import importlib

    from bli_memory import cli
    from bli_memory.errors import CliError
    from bli_memory.settings import ENV_TOKEN, ENV_URL

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in (ENV_URL, ENV_TOKEN, "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    run = getattr(importlib.import_module(module), function)
    own_args = argv if function == "print_config_main" else argv[1:]
    with pytest.raises(CliError) as raised:
        run(own_args)
    error = raised.value
    assert error.exit_code == status and error.message and "\n" not in error.message
    capsys.readouterr()
    assert cli.main(argv) == status
    shown = capsys.readouterr()
    assert shown.err == error.message + "\n" and shown.out == ""
    assert list(tmp_path.iterdir()) == [], "a command that failed wrote nothing"


def test_the_hook_path_does_not_import_the_cli_error(tmp_path: Path) -> None:
    from tests.hooks.helpers import hook_env

    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "bli_memory", "hook", "prompt"],
        input=json.dumps({"session_id": "s", "cwd": str(tmp_path), "prompt": "ok"}),
        capture_output=True,
        text=True,
        env=hook_env(tmp_path),
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0 and "[bli-memory] prompt" in done.stderr
    loaded = {
        line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    assert "bli_memory.cli" in loaded and "bli_memory.errors" not in loaded
