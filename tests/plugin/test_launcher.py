"""The plugin's launcher (plugins/bli-memory/bin/bli-memory), run as the hosts run it: a real `sh`, a
JSON payload on stdin, a temporary HOME, and a PATH made for each case (which interpreters exist)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO

LAUNCHER = REPO / "plugins" / "bli-memory" / "bin" / "bli-memory"
TIMEOUT_S = 30.0
TRIVIAL = '{"prompt":"ok","cwd":"/"}'
#: a `python3` that runs the launcher's entry file as an interpreter reporting 3.9 would
PRETEND_3_9 = """#!/bin/sh
exec {python} -c 'import sys; sys.version_info = (3, 9, 18); sys.argv = sys.argv[1:]; \
exec(compile(open(sys.argv[0]).read(), sys.argv[0], "exec"))' "$@"
"""


def tools_dir(tmp_path: Path) -> Path:
    """An empty folder for the PATH: the launcher itself runs no program but the interpreters."""
    folder = tmp_path / "bin"
    folder.mkdir(parents=True)
    return folder


def run(
    tmp_path: Path, path: list[Path], *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        ["/bin/sh", str(LAUNCHER), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={
            "HOME": str(home),
            "PATH": os.pathsep.join(str(p) for p in path),
            "BLI_MEMORY_DAEMON": "0",
            **env,
        },
        timeout=TIMEOUT_S,
        check=False,
    )


def test_the_launcher_runs_the_carried_client_with_python3(tmp_path: Path) -> None:
    folder = tools_dir(tmp_path)
    (folder / "python3").symlink_to(sys.executable)
    done = run(tmp_path, [folder], "hook", "prompt", stdin=TRIVIAL)
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.startswith("[bli-memory] prompt skipped {") and '"trivial_prompt"' in done.stderr
    version = run(tmp_path, [folder], "--version")
    assert version.stdout.startswith("bli-memory-mcp ")


def test_without_any_python_a_hook_says_what_to_install_in_one_line_and_exits_0(tmp_path: Path) -> None:
    empty = tools_dir(tmp_path)
    done = run(tmp_path, [empty], "hook", "prompt", stdin=TRIVIAL)
    assert done.returncode == 0 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("[bli-memory] prompt skipped: no Python 3.10 or newer found")
    assert "install Python 3.10+" in lines[0]
    server = run(tmp_path, [empty])
    assert server.returncode == 1 and server.stderr.startswith("[bli-memory] server skipped: no Python")


def test_an_interpreter_older_than_3_10_is_passed_over_and_the_payload_reaches_the_next(
    tmp_path: Path,
) -> None:
    folder = tools_dir(tmp_path)
    old = folder / "python3"
    old.write_text(PRETEND_3_9.format(python=sys.executable))
    old.chmod(0o755)
    (folder / "python").symlink_to(sys.executable)
    done = run(tmp_path, [folder], "hook", "prompt", stdin=TRIVIAL)
    assert done.returncode == 0
    # the hook ran once, on `python`, and read the payload (a trivial prompt is judged from it)
    assert done.stderr.count("[bli-memory] prompt") == 1 and '"trivial_prompt"' in done.stderr

    alone = tools_dir(tmp_path / "alone")
    shutil.copy(old, alone / "python3")
    done = run(tmp_path, [alone], "hook", "stop", stdin="{}")
    assert done.returncode == 0
    assert "tried: python3(older than 3.10)" in done.stderr and done.stderr.count("\n") == 1


def test_on_windows_the_microsoft_store_stub_is_never_run(tmp_path: Path) -> None:
    stub_dir = tmp_path / "AppData" / "Local" / "Microsoft" / "WindowsApps"
    stub_dir.mkdir(parents=True)
    stub = stub_dir / "python3"
    stub.write_text(
        "#!/bin/sh\necho 'Python was not found; run without arguments to install from the Microsoft Store' >&2\nexit 49\n"
    )
    stub.chmod(0o755)
    real = tools_dir(tmp_path)
    (real / "python").symlink_to(sys.executable)
    done = run(tmp_path, [stub_dir, real], "hook", "prompt", stdin=TRIVIAL, OS="Windows_NT")
    assert done.returncode == 0
    assert "Microsoft Store" not in done.stderr and '"trivial_prompt"' in done.stderr

    done = run(tmp_path, [stub_dir], "hook", "prompt", stdin=TRIVIAL, OS="Windows_NT")
    assert done.returncode == 0
    assert "tried: python3(Microsoft Store stub)" in done.stderr and done.stderr.count("\n") == 1
