"""Shared fixtures: the real door as a subprocess on an ephemeral loopback port over a temporary SQLite file.

- `door`: one door for the whole session (embedder `none`, extraction worker on). Tests that share it
  use their own space (`tag` fixture) and their own tokens (`door.pair(...)`), so they never see each
  other's rows.
- `door_onnx`: the same with the packaged MiniLM model (meaning search).
- `start_door(**options)`: a fresh door of a test's own, stopped (or killed) by the test or at teardown.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

#: where a person's own files are found; the test process points every one at a folder of its own.
HOME_VARIABLES = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
)
#: settings a person may have exported for their own use that would point a test at their door or hosts.
PERSONAL_VARIABLE_PREFIXES = ("BLI_MEMORY_", "CLAUDE_CONFIG_DIR", "CODEX_HOME")
#: test-tool settings that point at no person's data (the Codex CLI that scripts/test installs).
KEPT_VARIABLES = ("BLI_MEMORY_CODEX_CLI",)
_guard = pytest.MonkeyPatch()
_guard_home: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Guard: the test process (and every subprocess that inherits its environment) sees a HOME and
    XDG folders of its own, and none of the person's BLI_MEMORY_* / host settings.

    A test that forgets to pass a temporary HOME can then never read the person's session file (and
    reach their door) nor write their ~/.claude.json. This runs at configure time rather than in a
    session fixture so it also covers what test modules do while they are imported."""
    global _guard_home
    _guard_home = tempfile.mkdtemp(prefix="bli-tests-home-")
    for name in HOME_VARIABLES:
        folder = _guard_home if name == "HOME" else os.path.join(_guard_home, name.lower())
        os.makedirs(folder, mode=0o700, exist_ok=True)
        _guard.setenv(name, folder)
    for name in list(os.environ):
        if name.startswith(PERSONAL_VARIABLE_PREFIXES) and name not in KEPT_VARIABLES:
            _guard.delenv(name)


def pytest_unconfigure(config: pytest.Config) -> None:
    _guard.undo()
    if _guard_home is not None:
        shutil.rmtree(_guard_home, ignore_errors=True)


DOOR_START_TIMEOUT_S = 60.0
LISTENING = "bli-memory-door listening on "
BIN = Path(sys.executable).parent


class DoorProcess:
    """A running `bli-memory-door serve`; its stderr is drained into `lines` so it never blocks."""

    def __init__(
        self, db: Path, home: Path, extra_args: list[str], env: dict[str, str] | None = None
    ) -> None:
        self.db = db
        self.home = home
        self.extra_args = extra_args
        self.extra_env = env or {}
        self.lines: list[str] = []
        self.url = ""
        self.token = ""
        self.process: subprocess.Popen[str] | None = None
        self.start()

    def env(self) -> dict[str, str]:
        env = {**os.environ, "HOME": str(self.home), "XDG_DATA_HOME": str(self.home / "share")}
        env.pop("BLI_MEMORY_EMBEDDER", None)
        env.update(self.extra_env)
        return env

    def start(self) -> None:
        """Start (or restart, on the same file) and wait for the listening line."""
        command = [
            str(BIN / "bli-memory-door"),
            "serve",
            "--port",
            "0",
            "--db",
            str(self.db),
            "--no-autopair",
        ]
        self.process = subprocess.Popen(
            command + self.extra_args,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=self.env(),
        )
        ready = threading.Event()
        process = self.process

        def drain() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                self.lines.append(line.rstrip("\n"))
                if line.startswith(LISTENING):
                    self.url = line[len(LISTENING) :].strip()
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(DOOR_START_TIMEOUT_S) or not self.url or process.poll() is not None:
            self.kill()
            raise RuntimeError("the door did not start:\n" + "\n".join(self.lines[-20:]))
        if not self.token:
            self.token = self.pair("tester", team="local", admin=True)

    def pair(self, person: str, team: str | None = None, admin: bool = False) -> str:
        """A new device token (through the real CLI) for `person` in `team`."""
        command = [str(BIN / "bli-memory-door"), "pair", "--person", person, "--db", str(self.db)]
        if team:
            command += ["--team", team]
        if admin:
            command.append("--admin")
        done = subprocess.run(command, capture_output=True, text=True, env=self.env(), timeout=60, check=True)
        return done.stdout.strip()

    def request(
        self, method: str, path: str, body: Any = None, token: str | None = None, raw: bytes | None = None
    ) -> tuple[int, Any]:
        """One HTTP call (urllib; tests are not the hook path). Returns (status, decoded JSON or text)."""
        import urllib.error
        import urllib.request

        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        chosen = self.token if token is None else token
        if chosen:
            request.add_header("Authorization", f"Bearer {chosen}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, payload = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, payload = error.code, error.read()
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, payload.decode(errors="replace")

    def post(self, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        return self.request("POST", path, body, token)

    def get(self, path: str, token: str | None = None) -> tuple[int, Any]:
        return self.request("GET", path, None, token)

    def stop(self) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def wait_for_log(self, needle: str, timeout_s: float = 30.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if needle in line:
                    return line
            time.sleep(0.05)
        raise AssertionError(f"no log line with {needle!r}; last lines:\n" + "\n".join(self.lines[-20:]))


def _start(tmp: Path, args: list[str], env: dict[str, str] | None = None) -> DoorProcess:
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    return DoorProcess(tmp / "memory.db", home, args, env)


@pytest.fixture(scope="session")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorProcess]:
    process = _start(tmp_path_factory.mktemp("door"), ["--embedder", "none"])
    yield process
    process.stop()


@pytest.fixture(scope="session")
def door_onnx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorProcess]:
    process = _start(tmp_path_factory.mktemp("door_onnx"), ["--embedder", "onnx"])
    yield process
    process.stop()


@pytest.fixture
def start_door(tmp_path: Path) -> Iterator[Callable[..., DoorProcess]]:
    started: list[DoorProcess] = []

    def start(*args: str, env: dict[str, str] | None = None, folder: str = "own") -> DoorProcess:
        process = _start(tmp_path / folder, list(args) or ["--embedder", "none"], env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture
def tag() -> str:
    """A space of the test's own on a shared door."""
    return f"repo_test_{uuid.uuid4().hex[:12]}"
