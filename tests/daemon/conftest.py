"""Fixtures of the daemon tests: a short temporary HOME (a unix socket path must fit in ~104 bytes), the
daemons a test started (stopped at teardown), a HOME paired with the door, and a guard (autouse) that
fails a test reaching the daemon of the HOME running the tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bli_memory import daemon, paths
from bli_memory.settings import write_session
from tests.daemon.helpers import Daemon, RealHomeReached, is_real_home, runs_bli_memory


@pytest.fixture(autouse=True)
def never_the_real_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail loudly, at the call, when a test would use the real HOME's daemon folder in this process
    (`paths.state_dir`, which the socket, lock and stamps all go through) or start a
    bli-memory process whose environment is the real HOME (or inherits it: no `env`)."""
    state_dir = paths.state_dir

    def guarded_state_dir(env: Any = None) -> str:
        source = os.environ if env is None else env
        if is_real_home(source.get("HOME")):
            raise RealHomeReached("this test reaches the real HOME's daemon: give it a temporary HOME")
        return state_dir(env)

    class GuardedPopen(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, args: Any, *rest: Any, **options: Any) -> None:
            env = options.get("env")
            if runs_bli_memory(args) and is_real_home(None if env is None else env.get("HOME")):
                raise RealHomeReached(f"{args!r} would run on the real HOME: pass env with a temporary HOME")
            super().__init__(args, *rest, **options)

    monkeypatch.setattr(paths, "state_dir", guarded_state_dir)
    monkeypatch.setattr(subprocess, "Popen", GuardedPopen)


@pytest.fixture
def home() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="bd", dir="/tmp"))
    try:
        yield folder
    finally:
        daemon.stop({"HOME": str(folder)})  # one a hook or a failed test started must not idle for hours
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def daemons() -> Iterator[list[Daemon]]:
    started: list[Daemon] = []
    yield started
    for one in started:
        one.stop()


@pytest.fixture
def paired(home: Path, door: Any, tag: str) -> Path:
    """A HOME paired with the door, with one memory in the test's own space."""
    write_session(door.url, door.token, env={"HOME": str(home)})
    status, _ = door.post(
        "/api/memory/save",
        {"content": "The stop_hook saves the turn through the librarian.", "containerTag": tag},
    )
    assert status == 201
    return home
