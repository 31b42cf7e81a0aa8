"""The README's commands, typed in order on a fresh machine, print what the README shows.

Every ```console block of README.md is a session: `$ command` lines, each followed by the output it
prints. This test runs them all, in order, in one bash session, the way a newcomer types them:

- in a fresh HOME (a temporary folder) holding a copy of git's files of this checkout at
  ~/bli-memory, made a git repository with an origin as a clone is;
- `.venv` in that copy is the test suite's own venv (a symlink), and `scripts/quickstart` runs with
  BLI_MEMORY_QUICKSTART_NO_INSTALL=1: installing again would take a minute and the network. Its one
  line that says so stands for the README's "== installing" line (normalisation 1 below);
- the quickstart starts a real door with the packaged MiniLM model, on a port free at the time
  (BLI_MEMORY_PORT; 8787 may be taken by the person's own door, which must never be touched);
- on a terminal (a pseudo-terminal), so stdout and stderr interleave as a person sees them.

The output is compared line by line with the README's after these normalisations, and only these;
anything else that differs fails the test:

1. the quickstart's "== using .venv as it is" line is the README's "== installing" line;
2. the temporary HOME is /home/you (the README's person is `you`: USER and LOGNAME say so);
3. the door's port is 8787;
4. memory ids (`mem_` + 24 hex), device ids (`dev_` + 24 hex) and the 16-hex hash of a space tag
   are placeholders;
5. a hook's `"elapsed_ms":N` is a placeholder;
6. a cosine similarity may differ from the README's by at most SIMILARITY_TOLERANCE (the same model
   rounds differently on another CPU), and is then a placeholder.

A command is skipped only when its block is preceded by `<!-- readme-test: skip (reason) -->` and the
command is listed in SKIPPED below with the same reason, so a skip is never silent; a command that
starts a program outside ALLOWED_PROGRAMS fails the test before anything runs (the session's .venv is
the suite's own, which `scripts/test` or a pip command would reinstall). Before `status`
the test waits (bounded) for the daemon the prompt hook started to answer: a person types the next
command seconds later. The door and the daemon are stopped at the end.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bli_memory.door.keyword import tokens
from tests.helpers import REPO

README = REPO / "README.md"
VENV = Path(sys.prefix)
#: the whole README session: the quickstart starts a door with the model (~5 s), the rest is quick.
SESSION_TIMEOUT_S = 120.0
DAEMON_WAIT_S = 10.0
SIMILARITY_TOLERANCE = 0.02
SKIP_MARK = re.compile(r"^<!-- readme-test: skip \((?P<reason>[^)]+)\) -->$")
#: every command the test does not run, and why; the README's skip marker must give the same reason.
SKIPPED = {"scripts/test": "it runs this very test suite"}
COMMAND_MARK = "@@readme-command-{}@@"
#: the programs a README command may start. The session's .venv is the suite's own: a command that
#: installs into it (scripts/test, pip) must be skipped, so anything else fails before anything runs.
ALLOWED_PROGRAMS = {"scripts/quickstart", "export", "bli-memory-mcp", "bli-memory-door", "echo"}
ORIGIN = "https://example.invalid/you/bli-memory.git"
INSTALL_LINE = "== installing bli-memory[door] (with the MiniLM model) into .venv"
NO_INSTALL_LINE = "== using .venv as it is (BLI_MEMORY_QUICKSTART_NO_INSTALL=1)"
SIMILARITY = re.compile(r"cosine similarity (\d\.\d\d)")
#: waits (bounded) until the daemon's socket accepts a connection
WAIT_FOR_DAEMON = """\
import os, socket, sys, time
path = os.path.expanduser("~/.local/state/bli-cockpit/memory-daemon.sock")
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(path)
            break
        except OSError:
            time.sleep(0.05)
"""
#: before a command (by how it starts), a step that waits for what a person's pace gives for free
SETTLE = {"bli-memory-mcp status": f"{sys.executable} {{folder}}/wait_for_daemon.py {DAEMON_WAIT_S}"}


@dataclass
class Command:
    line: str
    expected: list[str]
    skip_reason: str | None


def readme_commands(text: str) -> list[Command]:
    """The `$ ` commands of every ```console block, each with the lines it is shown to print."""
    commands: list[Command] = []
    lines = text.splitlines()
    index = 0
    previous = ""
    while index < len(lines):
        line = lines[index]
        if line.strip() != "```console":
            if line.strip():
                previous = line.strip()
            index += 1
            continue
        mark = SKIP_MARK.match(previous)
        skip_reason = mark.group("reason") if mark else None
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            body = lines[index]
            if body.startswith("$ "):
                commands.append(Command(body[2:], [], skip_reason))
            else:
                assert commands and commands[-1].line, f"README line {index + 1}: output before any command"
                commands[-1].expected.append(body)
            index += 1
        index += 1
        previous = ""
    for command in commands:
        while command.expected and not command.expected[-1].strip():
            command.expected.pop()
    return commands


def programs(line: str) -> set[str]:
    """The first word of each part of a shell command line (`a x | b && c` -> {a, b, c})."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    found, starting = set(), True
    for token in lexer:
        if token in ("|", "||", "&&", ";", "&"):
            starting = True
        elif starting:
            found.add(token)
            starting = False
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def git_files_copy(target: Path) -> None:
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True, timeout=30
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)


@dataclass
class Session:
    home: Path
    port: int
    outputs: list[list[str]]
    extra: list[str]


def run_in_terminal(script: Path, env: dict[str, str], cwd: Path) -> tuple[str, int]:
    """Run `bash script` on a pseudo-terminal in a session of its own; its output (CRLF as LF) and
    its process group id. A session still running at SESSION_TIMEOUT_S is cut short (its output so
    far is returned; the caller stops the group)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        ["bash", "--noprofile", "--norc", str(script)],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + SESSION_TIMEOUT_S
    try:
        while process.poll() is None or select.select([leader], [], [], 0)[0]:
            left = deadline - time.monotonic()
            if left <= 0:
                chunks.append(b"\n(the README session did not finish in time)\n")
                break
            ready, _, _ = select.select([leader], [], [], min(left, 0.5))
            if not ready:
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: every writer is gone
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
    return b"".join(chunks).decode(errors="replace").replace("\r\n", "\n"), process.pid


def stop_helpers(home: Path, group: int) -> None:
    """Stop the door (in the session's process group) and the daemon (its own session, by its lock)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    lock = home / ".local" / "state" / "bli-cockpit" / "memory-daemon.lock"
    try:
        pid = int(lock.read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return
    if b"bli_memory" in cmdline:
        os.kill(pid, signal.SIGTERM)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    home = tmp_path_factory.mktemp("readme") / "home"
    checkout = home / "bli-memory"
    git_files_copy(checkout)
    (checkout / ".venv").symlink_to(VENV, target_is_directory=True)
    port = free_port()
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "USER": "you",
        "LOGNAME": "you",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "BLI_MEMORY_PORT": str(port),
        "BLI_MEMORY_QUICKSTART_NO_INSTALL": "1",
    }
    git_env = {**env, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=checkout, env=git_env, check=True, timeout=30)
    subprocess.run(
        ["git", "remote", "add", "origin", ORIGIN], cwd=checkout, env=git_env, check=True, timeout=30
    )

    commands = readme_commands(README.read_text(encoding="utf-8"))
    for command in commands:
        unknown = programs(command.line) - ALLOWED_PROGRAMS
        assert command.skip_reason or not unknown, f"README command {command.line!r} runs {sorted(unknown)}"
    lines = ["exec 2>&1", f"cd {shlex.quote(str(checkout))}"]
    for number, command in enumerate(commands):
        lines.append(f"printf '\\n%s\\n' '{COMMAND_MARK.format(number)}'")
        if command.skip_reason is not None:
            continue
        settle = next((step for start, step in SETTLE.items() if command.line.startswith(start)), None)
        if settle:
            lines.append(settle.format(folder=home.parent))
        lines.append(command.line)
    # after the README: what its prose claims about the search, in the same session
    search = next(c.line for c in commands if c.line.startswith("bli-memory-mcp search "))
    lines.append(f"printf '\\n%s\\n' '{COMMAND_MARK.format('extra')}'")
    lines.append(search.replace("bli-memory-mcp search ", "bli-memory-mcp search --json ", 1))
    (home.parent / "wait_for_daemon.py").write_text(WAIT_FOR_DAEMON)
    script = home.parent / "readme.sh"
    script.write_text("\n".join(lines) + "\n")

    output, group = run_in_terminal(script, env, checkout)
    try:
        (home.parent / "readme.out").write_text(output)  # the raw session, to read when this test fails
        parts = re.split(r"\n?@@readme-command-(\d+|extra)@@\n", output)
        outputs: dict[str, list[str]] = {
            parts[i]: parts[i + 1].splitlines() for i in range(1, len(parts) - 1, 2)
        }
        ordered = [
            outputs.get(str(number), ["(the session ended before this command)"])
            for number in range(len(commands))
        ]
        yield Session(home, port, ordered, outputs.get("extra", []))
    finally:
        stop_helpers(home, group)


def normalise(lines: list[str], home: Path | None, port: int | None) -> list[str]:
    out = []
    for line in lines:
        if line == NO_INSTALL_LINE:
            line = INSTALL_LINE
        if home is not None:
            line = line.replace(str(home), "/home/you")
        if port is not None:
            line = line.replace(f"127.0.0.1:{port}", "127.0.0.1:8787")
        line = re.sub(r"\bmem_[0-9a-f]{24}\b", "mem_<id>", line)
        line = re.sub(r"\bdev_[0-9a-f]{24}\b", "dev_<id>", line)
        line = re.sub(r"\b((?:repo|dir)_[A-Za-z0-9_.-]+?)__[0-9a-f]{16}\b", r"\1__<hash>", line)
        line = re.sub(r'"elapsed_ms":\d+', '"elapsed_ms":<ms>', line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


def similarities(lines: list[str]) -> list[float]:
    return [float(value) for line in lines for value in SIMILARITY.findall(line)]


def test_every_readme_command_prints_what_the_readme_shows(session: Session) -> None:
    commands = readme_commands(README.read_text(encoding="utf-8"))
    assert any(c.line == "scripts/quickstart" for c in commands), "the README starts with the quickstart"
    skipped = {c.line: c.skip_reason for c in commands if c.skip_reason is not None}
    assert skipped == SKIPPED, "a skipped README command must be listed, with its reason, in SKIPPED"
    differences = []
    for command, actual in zip(commands, session.outputs, strict=True):
        if command.skip_reason is not None:
            continue
        expected = normalise(command.expected, None, None)
        got = normalise(actual, session.home, session.port)
        shown, real = similarities(expected), similarities(got)
        close = len(shown) == len(real) and all(
            abs(a - b) <= SIMILARITY_TOLERANCE for a, b in zip(shown, real, strict=True)
        )
        if not close or SIMILARITY.sub("<s>", "\n".join(got)) != SIMILARITY.sub("<s>", "\n".join(expected)):
            differences.append(
                f"$ {command.line}\n--- README:\n" + "\n".join(expected) + "\n--- typed:\n" + "\n".join(got)
            )
    assert not differences, "\n\n".join(differences)


def test_the_readme_search_finds_the_memory_by_meaning_alone(session: Session) -> None:
    """The README says the search shares no word with the memory: no stem in common, and the door
    says it matched by meaning only."""
    import json

    commands = readme_commands(README.read_text(encoding="utf-8"))
    saved = next(c.line for c in commands if c.line.startswith("bli-memory-mcp save "))
    asked = next(c.line for c in commands if c.line.startswith("bli-memory-mcp search "))
    memory = saved.split(" ", 2)[2].strip('"')
    query = asked.split(" ", 2)[2].strip('"')
    assert not set(tokens(memory)) & set(tokens(query)), "the question shares a word with the memory"
    answer = json.loads("\n".join(session.extra))
    [hit] = answer["memories"]
    assert hit["content"] == memory
    assert hit["matchedBy"] == ["vector"]
