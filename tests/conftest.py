"""Shared fixtures: the real door as a subprocess on an ephemeral loopback port over a temporary SQLite file
(or a PostgreSQL database).

- `door`: one door for the whole session (embedder `none`, extraction worker on). Tests that share it
  use their own space (`tag` fixture) and their own tokens (`door.pair(...)`), so they never see each
  other's rows.
- `door_onnx`: the same with the packaged MiniLM model (meaning search).
- `start_door(**options)`: a fresh door of a test's own, stopped (or killed) by the test or at teardown;
  `store="postgresql"` puts it on a database of its own on the session's PostgreSQL server.
- `postgres`: that server, started once per session (`tests.helpers.PostgresServer`); when it cannot
  start, the tests that need it fail with a line that says why.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import POSTGRES_URL_ENV, DoorProcess, PostgresServer

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
#: test-tool settings that point at no person's data (the Codex CLI and Claude Code that scripts/test installs).
KEPT_VARIABLES = ("BLI_MEMORY_CODEX_CLI", "BLI_MEMORY_CLAUDE_CLI", POSTGRES_URL_ENV)
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


def _start(
    tmp: Path, args: list[str], env: dict[str, str] | None = None, db: str | None = None
) -> DoorProcess:
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    return DoorProcess(db or tmp / "memory.db", home, args, env)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer()
    except Exception as exc:
        pytest.fail(
            f"cannot start the test PostgreSQL server ({type(exc).__name__}: {exc}); install the dev extra "
            f"(it brings pgserver) or name a server in {POSTGRES_URL_ENV}",
            pytrace=False,
        )
    yield server
    server.stop()


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
def start_door(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., DoorProcess]]:
    started: list[DoorProcess] = []

    def start(
        *args: str, env: dict[str, str] | None = None, folder: str = "own", store: str = "sqlite"
    ) -> DoorProcess:
        db = None
        if store == "postgresql":
            db = request.getfixturevalue("postgres").database_for(tmp_path / folder)
        process = _start(tmp_path / folder, list(args) or ["--embedder", "none"], env, db)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture
def tag() -> str:
    """A space of the test's own on a shared door."""
    return f"repo_test_{uuid.uuid4().hex[:12]}"
