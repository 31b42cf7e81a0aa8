"""scripts/quickstart on the port it is given: start a door, reuse our own, and say the truth otherwise.

The script runs for real (bash, the real door and client of this environment) from a copy of it in
a temporary checkout whose `.venv` points at this environment. The one stand-in is pip: the copy's
`.venv/bin/python` answers `-m pip` with success instead of reinstalling this environment, and runs
the real interpreter for everything else.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO, DoorProcess

BIN = Path(sys.executable).parent
#: install (skipped), door start with the model
QUICKSTART_TIMEOUT_S = 150


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "quickstart", root / "scripts" / "quickstart")
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    python.write_text(
        "#!/bin/sh\n"
        '# pip stands in: this environment is installed already\n[ "$1" = -m ] && [ "$2" = pip ] && exit 0\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    for name in ("bli-memory-door", "bli-memory-mcp"):
        (venv_bin / name).symlink_to(BIN / name)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """The quickstart user's HOME; any door a quickstart left running under it is stopped at the end."""
    folder = tmp_path / "home"
    folder.mkdir()
    yield folder
    for pid in _doors_of(folder):
        os.kill(pid, signal.SIGTERM)


def _doors_of(home: Path) -> list[int]:
    """The door processes started with this HOME (the quickstart leaves its door running)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"bli-memory-door" in cmdline and f"HOME={home}".encode() in environ:
            found.append(int(entry.name))
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def quickstart(checkout: Path, home: Path, port: int) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("BLI_MEMORY_", "XDG_", "VIRTUAL_ENV", "PYTHON")) and key != "HOME"
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "share"),
        USER="dana",
        BLI_MEMORY_PORT=str(port),
        BLI_MEMORY_DAEMON="0",
    )
    return subprocess.run(
        ["bash", str(checkout / "scripts" / "quickstart")],
        capture_output=True,
        text=True,
        env=env,
        timeout=QUICKSTART_TIMEOUT_S,
        check=False,
    )


def test_quickstart_starts_a_door_and_a_second_run_reuses_it(checkout: Path, home: Path) -> None:
    port = _free_port()
    first = quickstart(checkout, home, port)
    assert first.returncode == 0 and first.stderr == "", first.stdout + first.stderr
    assert f"starting the door on 127.0.0.1:{port}" in first.stdout
    assert "embedder onnx:all-MiniLM-L6-v2-int8" in first.stdout, "search by meaning from [door] alone"
    assert "stop it with: .venv/bin/bli-memory-door stop" in first.stdout
    doors = _doors_of(home)
    assert len(doors) == 1

    again = quickstart(checkout, home, port)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"a door already runs on http://127.0.0.1:{port} and you are paired with it" in again.stdout
    assert "starting the door" not in again.stdout
    assert _doors_of(home) == doors, "no second door"


def test_quickstart_on_a_port_another_door_holds_says_so_and_exits(
    checkout: Path, home: Path, start_door: Callable[..., DoorProcess]
) -> None:
    """Someone else's door (its own HOME and database): no pairing of ours, so no save can work."""
    other = start_door("--embedder", "none")
    port = int(other.url.rsplit(":", 1)[1])
    result = quickstart(checkout, home, port)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"a door already runs on http://127.0.0.1:{port}, but you are not paired with it" in result.stdout
    assert f"BLI_MEMORY_PORT={port + 1} scripts/quickstart" in result.stdout
    assert "bli-memory-door serve" not in result.stdout + result.stderr, "no advice that would fail"
    assert "Saved memory" not in result.stdout and not _doors_of(home)


def test_quickstart_on_a_port_another_program_holds_names_another_port(checkout: Path, home: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        result = quickstart(checkout, home, port)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the door did not start" in result.stdout and "cannot listen on" in result.stdout
    assert f"Port {port} is held by another program" in result.stdout
    assert f"BLI_MEMORY_PORT={port + 1} scripts/quickstart" in result.stdout
    assert not _doors_of(home)
